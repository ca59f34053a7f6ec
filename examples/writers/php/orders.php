<?php
// Orders and their events in one PDO transaction, on MySQL/MariaDB or
// PostgreSQL. The outbox row is a plain INSERT: herald's trigger numbers
// it in its aggregate and makes it ready; a rollback leaves nothing.

final class CreditLimitExceeded extends RuntimeException {}

function uuid4(): string
{
    $b = random_bytes(16);
    $b[6] = chr(ord($b[6]) & 0x0f | 0x40);
    $b[8] = chr(ord($b[8]) & 0x3f | 0x80);
    return vsprintf('%s%s-%s-%s-%s-%s%s%s', str_split(bin2hex($b), 4));
}

function addEvent(PDO $db, string $orderId, string $type, array $payload): string
{
    $id = uuid4();
    $db->prepare('INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, schema_version, payload)
                  VALUES (?, ?, ?, ?, ?, ?)')
       ->execute([$id, 'order', $orderId, $type, 1, json_encode($payload)]);
    return $id;
}

/** @return array{0: string, 1: string} the order's id and its event's id */
function createOrder(PDO $db, int $customerId, string $total): array
{
    $db->beginTransaction();
    try {
        if ($db->getAttribute(PDO::ATTR_DRIVER_NAME) === 'pgsql') {
            $st = $db->prepare("INSERT INTO orders (customer_id, total_amount, status) VALUES (?, ?, 'created') RETURNING id");
            $st->execute([$customerId, $total]);
            $orderId = (string) $st->fetchColumn();
        } else {
            $db->prepare("INSERT INTO orders (customer_id, total_amount, status) VALUES (?, ?, 'created')")
               ->execute([$customerId, $total]);
            $orderId = $db->lastInsertId();
        }
        $eventId = addEvent($db, $orderId, 'order.created',
            ['order_id' => (int) $orderId, 'customer_id' => $customerId, 'total_amount' => $total]);
        if ((float) $total > 1000) {
            throw new CreditLimitExceeded("order $orderId: $total is over the credit limit");
        }
        $db->commit();
        return [$orderId, $eventId];
    } catch (Throwable $e) {
        $db->rollBack(); // the order and its event are gone, never published
        throw $e;
    }
}

/** @return ?string the event's id, null when the order was not open */
function cancelOrder(PDO $db, string $orderId): ?string
{
    $db->beginTransaction();
    try {
        $st = $db->prepare("UPDATE orders SET status = 'cancelled' WHERE id = ? AND status = 'created'");
        $st->execute([$orderId]);
        if ($st->rowCount() === 0) {
            $db->rollBack();
            return null;
        }
        $eventId = addEvent($db, $orderId, 'order.cancelled', ['order_id' => (int) $orderId, 'reason' => 'customer request']);
        $db->commit();
        return $eventId;
    } catch (Throwable $e) {
        $db->rollBack();
        throw $e;
    }
}
