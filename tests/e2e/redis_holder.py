"""A client holding one of a Redis server's connections (tests/e2e/redis_maxclients.sh): connects
to the unix socket SOCK, PINGs; on PONG creates READY and waits until GO exists, then sends
CONFIG SET maxclients 1000 on its connection (a full server takes no new one) and exits 0 on
OK. Exits 1 when the server refused it (its reply printed on stderr).
usage: redis_holder.py SOCK READY GO"""
import os
import socket
import sys
import time

sock, ready, go = sys.argv[1:4]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sock)
s.sendall(b"PING\r\n")
reply = s.recv(256)
if not reply.startswith(b"+PONG"):
    sys.stderr.write("refused: %r\n" % reply)
    sys.exit(1)
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.05)
s.sendall(b"CONFIG SET maxclients 1000\r\n")
reply = s.recv(256)
sys.stderr.write("CONFIG SET maxclients 1000: %r\n" % reply)
sys.exit(0 if reply.startswith(b"+OK") else 1)
