// All logging goes through here: writes to stderr when AJ_LOG or AJ_DUMP
// (comma-separated, e.g. AJ_LOG=plan, AJ_DUMP=graph,buffers) or aj::set_log()
// lists `channel` (or "all"). Channels: plan, program, compile, jit, passes,
// graph, buffers, ir, asm, cuda. An unknown channel name is reported once, with the valid ones.
#pragma once

#include <string>

namespace aj::detail {

bool log_enabled(const char* channel);
// Whether any channel could be on (cheaper than asking for each channel).
bool log_any();
void log(const char* channel, const std::string& text);
// The channels aj::set_log() added ("" clears them).
void set_log_channels(const std::string& channels);

}  // namespace aj::detail
