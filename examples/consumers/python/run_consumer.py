"""Runs consumer.py for the consumer test (examples/consumers/consumer_test.go):
CONSUMER_TOPIC, CONSUMER_GROUP, CONSUMER_NAME (the inbox's), CONSUMER_DB
(mysql or postgres) and CONSUMER_HOST/PORT/USER/PASSWORD/DATABASE,
KAFKA_BROKERS. Prints one JSON line per event. SIGTERM stops it after the
batch in hand (its offsets committed). CONSUMER_KILL_AFTER=N is a
failpoint: the process SIGKILLs itself right after the Nth effect it
applied (the database committed, the batch's offsets not). Run with the
virtualenv of stack/writers.sh (confluent-kafka, and Debian's psycopg2 and
PyMySQL)."""

import json
import os
import signal
import sys

from confluent_kafka import Consumer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import consumer as inbox  # noqa: E402

env = os.environ
if env["CONSUMER_DB"] == "postgres":
    import psycopg2
    conn = psycopg2.connect(host=env["CONSUMER_HOST"], port=int(env["CONSUMER_PORT"]), user=env["CONSUMER_USER"],
                            password=env["CONSUMER_PASSWORD"], dbname=env["CONSUMER_DATABASE"])
else:
    import pymysql
    conn = pymysql.connect(host=env["CONSUMER_HOST"], port=int(env["CONSUMER_PORT"]), user=env["CONSUMER_USER"],
                           password=env["CONSUMER_PASSWORD"], database=env["CONSUMER_DATABASE"], charset="utf8mb4")

stopping = []
signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))

kafka = Consumer({
    "bootstrap.servers": env["KAFKA_BROKERS"],
    "group.id": env["CONSUMER_GROUP"],
    "group.instance.id": env["CONSUMER_GROUP"] + "-1",  # a restart takes the dead process's place at once
    "session.timeout.ms": 6000,
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
})
kafka.subscribe([env["CONSUMER_TOPIC"]])

applied = 0
kill_after = int(env.get("CONSUMER_KILL_AFTER", "0"))


def on_event(envelope, was_applied):
    global applied
    print(json.dumps({"event_id": envelope["event_id"], "applied": was_applied}), flush=True)
    if was_applied:
        applied += 1
        if applied == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)


print(json.dumps({"started": True}), flush=True)
inbox.run(kafka, conn, env["CONSUMER_NAME"], lambda: not stopping, batch=int(env.get("CONSUMER_BATCH", "100")),
          on_event=on_event)
kafka.close()
conn.close()
