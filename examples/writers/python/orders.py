"""Orders and their events in one transaction, with any DB-API driver
(PyMySQL or mysqlclient for MySQL/MariaDB, psycopg2 for PostgreSQL: all
take %s placeholders). The outbox row is a plain INSERT: herald's trigger
numbers it in its aggregate and makes it ready; a rollback leaves nothing."""

import json
import uuid


class CreditLimitExceeded(Exception):
    pass


def _postgres(conn):
    return type(conn).__module__.startswith("psycopg")


def _add_event(cur, order_id, event_type, payload):
    event_id = str(uuid.uuid4())
    cur.execute(
        "INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, schema_version, payload)"
        " VALUES (%s, %s, %s, %s, %s, %s)",
        (event_id, "order", str(order_id), event_type, 1, json.dumps(payload)),
    )
    return event_id


def create_order(conn, customer_id, total):
    """Returns (order_id, event_id); raises CreditLimitExceeded, having
    rolled both rows back, when the total is over the limit."""
    try:
        with conn.cursor() as cur:
            if _postgres(conn):
                cur.execute("INSERT INTO orders (customer_id, total_amount, status)"
                            " VALUES (%s, %s, 'created') RETURNING id", (customer_id, total))
                order_id = cur.fetchone()[0]
            else:
                cur.execute("INSERT INTO orders (customer_id, total_amount, status)"
                            " VALUES (%s, %s, 'created')", (customer_id, total))
                order_id = cur.lastrowid
            event_id = _add_event(cur, order_id, "order.created",
                                  {"order_id": order_id, "customer_id": customer_id, "total_amount": total})
            if float(total) > 1000:
                raise CreditLimitExceeded(f"order {order_id}: {total} is over the credit limit")
        conn.commit()
        return str(order_id), event_id
    except BaseException:
        conn.rollback()  # the order and its event are gone, never published
        raise


def cancel_order(conn, order_id):
    """Returns the event's id, or None when the order was not open."""
    try:
        with conn.cursor() as cur:
            cur.execute("UPDATE orders SET status = 'cancelled' WHERE id = %s AND status = 'created'", (order_id,))
            if cur.rowcount == 0:
                conn.rollback()
                return None
            event_id = _add_event(cur, order_id, "order.cancelled",
                                  {"order_id": int(order_id), "reason": "customer request"})
        conn.commit()
        return event_id
    except BaseException:
        conn.rollback()
        raise
