/* One redis-server for a cmocka group (see redis_group.h). */
#include "redis_group.h"

struct kbt_redis kbt_group_redis;

int kbt_redis_group_setup(void **state) {
  (void)state;
  return kbt_redis_start(&kbt_group_redis);
}

int kbt_redis_group_teardown(void **state) {
  (void)state;
  kbt_redis_destroy(&kbt_group_redis);
  return 0;
}
