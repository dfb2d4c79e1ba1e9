return redis.call("PING")
