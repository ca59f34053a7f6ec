<?php
// Runs a PHP writer snippet as one worker of the writers test
// (examples/writers/writers_test.go): `php run.php pdo` (orders.php) or
// `php run.php laravel` (laravel.php on laravel_shim.php). It creates
// WRITER_ORDERS orders for customer WRITER_CUSTOMER, every fourth over the
// credit limit (rolled back), then cancels each created order in a later
// transaction, the first one twice (the second finds nothing to cancel),
// and prints one JSON line per outcome. Its session is at +05:30; the
// application's clock is the process's TZ (+08:00 in the test).

$style = $argv[1] ?? 'pdo';
$env = fn (string $name) => getenv($name) !== false ? getenv($name) : throw new RuntimeException("$name is not set");
date_default_timezone_set(getenv('TZ') ?: 'UTC');

if ($env('WRITER_DB') === 'postgres') {
    $dsn = sprintf('pgsql:host=%s;port=%s;dbname=%s', $env('WRITER_HOST'), $env('WRITER_PORT'), $env('WRITER_DATABASE'));
    $zone = "SET TIME ZONE INTERVAL '+05:30' HOUR TO MINUTE";
} else {
    $dsn = sprintf('mysql:host=%s;port=%s;dbname=%s;charset=utf8mb4', $env('WRITER_HOST'), $env('WRITER_PORT'), $env('WRITER_DATABASE'));
    $zone = "SET time_zone = '+05:30'";
}
$db = new PDO($dsn, $env('WRITER_USER'), $env('WRITER_PASSWORD'), [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
$db->exec($zone);

if ($style === 'laravel') {
    require __DIR__ . '/laravel_shim.php';
    require __DIR__ . '/laravel.php';
    Illuminate\Support\Facades\DB::$pdo = $db;
    $create = fn (int $customer, string $total) => placeOrder($customer, $total);
    $cancel = fn (string $orderId) => cancelOrder($orderId);
} else {
    require __DIR__ . '/orders.php';
    $create = fn (int $customer, string $total) => createOrder($db, $customer, $total);
    $cancel = fn (string $orderId) => cancelOrder($db, $orderId);
}

$emit = function (array $line): void {
    echo json_encode($line), "\n";
};
$customer = (int) $env('WRITER_CUSTOMER');
$created = [];
for ($k = 0; $k < (int) $env('WRITER_ORDERS'); $k++) {
    $total = $k % 4 === 3 ? '5000.00' : sprintf('%d.50', 100 + $k);
    try {
        [$orderId, $eventId] = $create($customer, $total);
        $created[] = $orderId;
        $emit(['outcome' => 'committed', 'event_type' => 'order.created', 'order_id' => $orderId, 'event_id' => $eventId]);
    } catch (CreditLimitExceeded $e) {
        $emit(['outcome' => 'rolled_back', 'event_type' => 'order.created']);
    }
}
foreach ($created as $orderId) {
    $emit(['outcome' => 'committed', 'event_type' => 'order.cancelled', 'order_id' => $orderId, 'event_id' => $cancel($orderId)]);
}
if ($created) {
    if ($cancel($created[0]) !== null) {
        throw new RuntimeException("order {$created[0]} was cancelled twice");
    }
    $emit(['outcome' => 'rolled_back', 'event_type' => 'order.cancelled', 'order_id' => $created[0]]);
}
