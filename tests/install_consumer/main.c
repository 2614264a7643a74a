/* The C API against an installed arrayjit (the README's C example). */
#include <arrayjit/arrayjit.h>
#include <stdio.h>

int main(void) {
  const float data[4] = {1, 2, 3, 4};
  const int64_t shape[1] = {4};
  aj_array x = {0}, two = {0}, y = {0}, total = {0};
  double sum = 0;
  aj_status s = aj_array_from_data(data, AJ_F32, shape, 1, &x); /* a copy */
  if (s == AJ_OK) s = aj_scalar_f64(2.0, &two);                  /* weak: y stays f32 */
  if (s == AJ_OK) s = aj_multiply(x, two, &y);                   /* lazy */
  if (s == AJ_OK) s = aj_sum(y, NULL, 0, 0, &total);             /* all axes */
  if (s == AJ_OK) s = aj_array_item_f64(total, &sum);            /* evaluates */
  if (s != AJ_OK) fprintf(stderr, "error %d: %s\n", (int)s, aj_last_error());
  else printf("arrayjit %s: sum(2 * [1 2 3 4]) = %g\n", aj_version(), sum);
  aj_array_release(x); /* every handle once; null ones are ignored */
  aj_array_release(two);
  aj_array_release(y);
  aj_array_release(total);
  return s == AJ_OK && sum == 20 ? 0 : 1;
}
