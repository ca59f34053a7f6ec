<?php
// The specification's writer, in Laravel's shape: DB::transaction with
// OutboxEvent::create([...]) of exactly the reference columns, the times
// from now() in the application's time zone. Nothing herald-specific:
// herald's trigger numbers the event in its aggregate and replaces
// next_attempt_at with the database's UTC clock, so the event is ready at
// once whatever the application's zone.

use Illuminate\Database\Eloquent\Model;
use Illuminate\Support\Facades\DB;
use Illuminate\Support\Str;

class Order extends Model
{
    protected $table = 'orders';
    public $timestamps = false;
    protected $guarded = [];
}

class OutboxEvent extends Model
{
    protected $table = 'outbox_events';
    public $incrementing = false;
    protected $keyType = 'string';
    public $timestamps = false;
    protected $guarded = [];
}

final class CreditLimitExceeded extends RuntimeException {}

function placeOrder(int $customerId, string $total): array
{
    return DB::transaction(function () use ($customerId, $total) {
        $order = Order::create(['customer_id' => $customerId, 'total_amount' => $total, 'status' => 'created']);
        $event = OutboxEvent::create([
            'id' => (string) Str::uuid(),
            'aggregate_type' => 'order',
            'aggregate_id' => (string) $order->id,
            'event_type' => 'order.created',
            'schema_version' => 1,
            'payload' => json_encode(['order_id' => $order->id, 'customer_id' => $customerId, 'total_amount' => $total]),
            'occurred_at' => now(),
            'next_attempt_at' => now(),
        ]);
        if ((float) $total > 1000) {
            // DB::transaction rolls the order and its event back, and rethrows.
            throw new CreditLimitExceeded("order {$order->id}: $total is over the credit limit");
        }
        return [(string) $order->id, $event->id];
    });
}

function cancelOrder(string $orderId): ?string
{
    return DB::transaction(function () use ($orderId) {
        $cancelled = Order::where('id', $orderId)->where('status', 'created')->update(['status' => 'cancelled']);
        if ($cancelled === 0) {
            return null;
        }
        $event = OutboxEvent::create([
            'id' => (string) Str::uuid(),
            'aggregate_type' => 'order',
            'aggregate_id' => $orderId,
            'event_type' => 'order.cancelled',
            'schema_version' => 1,
            'payload' => json_encode(['order_id' => (int) $orderId, 'reason' => 'customer request']),
            'occurred_at' => now(),
            'next_attempt_at' => now(),
        ]);
        return $event->id;
    });
}
