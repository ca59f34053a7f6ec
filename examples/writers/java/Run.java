import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Runs the Java writer snippet (Orders.java) as workers of the writers test
 * (examples/writers/writers_test.go): WRITER_WORKERS threads, each on its
 * own connection, each creating WRITER_ORDERS orders for its own customer
 * (from WRITER_CUSTOMER on), every fourth over the credit limit (rolled
 * back), then cancelling each created order in a later transaction, the
 * first one twice (the second finds nothing to cancel). One JSON line per
 * outcome. Sessions are at +05:30; the application's clock is the JVM's
 * zone (TZ, +08:00 in the test).
 */
public final class Run {
    static String env(String name) {
        String v = System.getenv(name);
        if (v == null) throw new IllegalStateException(name + " is not set");
        return v;
    }

    static synchronized void emit(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static Connection connect() throws Exception {
        boolean postgres = env("WRITER_DB").equals("postgres");
        String url = postgres
                ? "jdbc:postgresql://" + env("WRITER_HOST") + ":" + env("WRITER_PORT") + "/" + env("WRITER_DATABASE") + "?stringtype=unspecified"
                : "jdbc:mysql://" + env("WRITER_HOST") + ":" + env("WRITER_PORT") + "/" + env("WRITER_DATABASE");
        Connection c = DriverManager.getConnection(url, env("WRITER_USER"), env("WRITER_PASSWORD"));
        try (Statement st = c.createStatement()) {
            st.execute(postgres ? "SET TIME ZONE INTERVAL '+05:30' HOUR TO MINUTE" : "SET time_zone = '+05:30'");
        }
        return c;
    }

    static void worker(long customer) throws Exception {
        try (Connection c = connect()) {
            List<Long> created = new ArrayList<>();
            int orders = Integer.parseInt(env("WRITER_ORDERS"));
            for (int k = 0; k < orders; k++) {
                BigDecimal total = new BigDecimal(k % 4 == 3 ? "5000.00" : (100 + k) + ".50");
                try {
                    Orders.Created o = Orders.createOrder(c, customer, total);
                    created.add(o.orderId());
                    emit(String.format("{\"outcome\":\"committed\",\"event_type\":\"order.created\",\"order_id\":\"%d\",\"event_id\":\"%s\"}",
                            o.orderId(), o.eventId()));
                } catch (Orders.CreditLimitExceeded e) {
                    emit("{\"outcome\":\"rolled_back\",\"event_type\":\"order.created\"}");
                }
            }
            for (long id : created) {
                emit(String.format("{\"outcome\":\"committed\",\"event_type\":\"order.cancelled\",\"order_id\":\"%d\",\"event_id\":\"%s\"}",
                        id, Orders.cancelOrder(c, id)));
            }
            if (!created.isEmpty()) {
                if (Orders.cancelOrder(c, created.get(0)) != null) {
                    throw new IllegalStateException("order " + created.get(0) + " was cancelled twice");
                }
                emit(String.format("{\"outcome\":\"rolled_back\",\"event_type\":\"order.cancelled\",\"order_id\":\"%d\"}", created.get(0)));
            }
        }
    }

    public static void main(String[] args) throws Exception {
        long first = Long.parseLong(env("WRITER_CUSTOMER"));
        int workers = Integer.parseInt(System.getenv().getOrDefault("WRITER_WORKERS", "4"));
        ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < workers; i++) {
            long customer = first + i;
            Thread t = new Thread(() -> {
                try {
                    worker(customer);
                } catch (Throwable e) {
                    errors.add(e);
                }
            });
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) t.join();
        for (Throwable e : errors) e.printStackTrace();
        if (!errors.isEmpty()) System.exit(1);
    }
}
