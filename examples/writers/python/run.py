"""Runs the Python writer snippet (orders.py) as workers of the writers
test (examples/writers/writers_test.go): WRITER_WORKERS threads, each on
its own connection, each creating WRITER_ORDERS orders for its own
customer (from WRITER_CUSTOMER on), every fourth over the credit limit
(rolled back), then cancelling each created order in a later transaction,
the first one twice (the second finds nothing to cancel). One JSON line per
outcome. Sessions are at +05:30; the application's clock is the process's
TZ (+08:00 in the test). Debian's /usr/bin/python3, with python3-pymysql
and python3-psycopg2."""

import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orders  # noqa: E402

lock = threading.Lock()
errors = []


def emit(**line):
    with lock:
        print(json.dumps(line), flush=True)


def connect():
    env = os.environ
    if env["WRITER_DB"] == "postgres":
        import psycopg2
        conn = psycopg2.connect(host=env["WRITER_HOST"], port=int(env["WRITER_PORT"]), user=env["WRITER_USER"],
                                password=env["WRITER_PASSWORD"], dbname=env["WRITER_DATABASE"])
        zone = "SET TIME ZONE INTERVAL '+05:30' HOUR TO MINUTE"
    else:
        import pymysql
        conn = pymysql.connect(host=env["WRITER_HOST"], port=int(env["WRITER_PORT"]), user=env["WRITER_USER"],
                               password=env["WRITER_PASSWORD"], database=env["WRITER_DATABASE"], charset="utf8mb4")
        zone = "SET time_zone = '+05:30'"
    with conn.cursor() as cur:
        cur.execute(zone)
    conn.commit()
    return conn


def worker(customer):
    try:
        conn = connect()
        created = []
        for k in range(int(os.environ["WRITER_ORDERS"])):
            total = "5000.00" if k % 4 == 3 else f"{100 + k}.50"
            try:
                order_id, event_id = orders.create_order(conn, customer, total)
            except orders.CreditLimitExceeded:
                emit(outcome="rolled_back", event_type="order.created")
                continue
            created.append(order_id)
            emit(outcome="committed", event_type="order.created", order_id=order_id, event_id=event_id)
        for order_id in created:
            emit(outcome="committed", event_type="order.cancelled", order_id=order_id,
                 event_id=orders.cancel_order(conn, order_id))
        if created:
            if orders.cancel_order(conn, created[0]) is not None:
                raise RuntimeError(f"order {created[0]} was cancelled twice")
            emit(outcome="rolled_back", event_type="order.cancelled", order_id=created[0])
        conn.close()
    except Exception as e:  # reported, and the process fails
        with lock:
            errors.append(e)


threads = [threading.Thread(target=worker, args=(int(os.environ["WRITER_CUSTOMER"]) + i,))
           for i in range(int(os.environ.get("WRITER_WORKERS", "4")))]
for t in threads:
    t.start()
for t in threads:
    t.join()
if errors:
    for e in errors:
        print(f"worker failed: {e!r}", file=sys.stderr)
    sys.exit(1)
