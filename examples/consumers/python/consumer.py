"""A consumer of herald's topics in Python: confluent-kafka for Kafka,
PyMySQL (MySQL/MariaDB) or psycopg2 (PostgreSQL) for its own database.
Each event is applied exactly once, however often Kafka delivers it: the
inbox row (consumed_events) and the effect commit in one transaction, an
event id already in the inbox means "applied before: do nothing", and the
offsets are committed only after the database committed."""

import json


def _postgres(conn):
    return type(conn).__module__.startswith("psycopg")


def record_consumed(conn, cur, consumer_name, event_id):
    """Inserts the inbox row; False when this consumer applied the event
    before (the transaction is still usable either way)."""
    if _postgres(conn):
        # A unique violation would abort a PostgreSQL transaction: ask for
        # nothing instead, and count the rows.
        cur.execute("INSERT INTO consumed_events (consumer_name, event_id, consumed_at)"
                    " VALUES (%s, %s, now()) ON CONFLICT DO NOTHING", (consumer_name, event_id))
        return cur.rowcount == 1
    import pymysql
    try:
        cur.execute("INSERT INTO consumed_events (consumer_name, event_id, consumed_at)"
                    " VALUES (%s, %s, UTC_TIMESTAMP(6))", (consumer_name, event_id))
        return True
    except pymysql.err.IntegrityError as e:
        if e.args[0] == 1062:  # ER_DUP_ENTRY: MySQL undoes the statement, the transaction goes on
            return False
        raise


def apply_effect(cur, envelope):
    """The business side effect: here, a line in order_effects."""
    cur.execute("INSERT INTO order_effects (event_id, order_id, event_type) VALUES (%s, %s, %s)",
                (envelope["event_id"], envelope["data"]["order_id"], envelope["type"]))


def handle(conn, consumer_name, envelope):
    """Applies one event in one transaction; returns False for a duplicate."""
    try:
        with conn.cursor() as cur:
            if not record_consumed(conn, cur, consumer_name, envelope["event_id"]):
                conn.rollback()
                return False
            apply_effect(cur, envelope)
        conn.commit()
        return True
    except BaseException:
        conn.rollback()
        raise


def run(consumer, conn, consumer_name, running, batch=100, on_event=None):
    """Consumes until running() is false. consumer: a confluent_kafka.Consumer
    with enable.auto.commit=False, subscribed to the topics. A failure
    (database down, a bad record) raises: nothing after the last committed
    offset is lost, the next run gets it again and the inbox skips what was
    applied."""
    while running():
        messages = consumer.consume(num_messages=batch, timeout=1.0)
        for msg in messages:
            if msg.error():
                raise RuntimeError(f"kafka: {msg.error()}")
            envelope = json.loads(msg.value())  # docs/contracts.md: event_id, type, version, occurred_at, data
            applied = handle(conn, consumer_name, envelope)
            if on_event:
                on_event(envelope, applied)
        if messages:
            consumer.commit(asynchronous=False)  # only now: every effect of the batch is committed
