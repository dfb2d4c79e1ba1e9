/* Test fixture: one redis-server (redis_fixture.h) for a whole cmocka group. Pass
 * kbt_redis_group_setup and kbt_redis_group_teardown to cmocka_run_group_tests(); the tests
 * reach the server through kbt_group_redis (its addr, dir, pid; restarts allowed). */
#ifndef KB_TEST_REDIS_GROUP_H
#define KB_TEST_REDIS_GROUP_H

#include "redis_fixture.h"

/* The group's server: started by the setup, stopped and its folder removed by the teardown. */
extern struct kbt_redis kbt_group_redis;

/* Starts kbt_group_redis. Returns 0, or -1 (message on stderr). */
int kbt_redis_group_setup(void **state);
/* Destroys kbt_group_redis. Returns 0. */
int kbt_redis_group_teardown(void **state);

#endif
