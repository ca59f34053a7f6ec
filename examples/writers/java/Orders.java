import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;

/**
 * Orders and their events in one JDBC transaction, on MySQL/MariaDB
 * (Connector/J) or PostgreSQL (pgjdbc, with stringtype=unspecified in the
 * URL so that text parameters fill uuid and json columns). The outbox row is
 * a plain INSERT: herald's trigger numbers it in its aggregate and makes it
 * ready; a rollback leaves nothing.
 */
public final class Orders {
    /** The order is over the credit limit: nothing of it was committed. */
    public static final class CreditLimitExceeded extends Exception {
        CreditLimitExceeded(String message) { super(message); }
    }

    /** A created order: its id and its event's id. */
    public record Created(long orderId, String eventId) {}

    private static String addEvent(Connection c, long orderId, String type, String payload) throws SQLException {
        String id = UUID.randomUUID().toString();
        try (PreparedStatement st = c.prepareStatement(
                "INSERT INTO outbox_events (id, aggregate_type, aggregate_id, event_type, schema_version, payload)"
                        + " VALUES (?, ?, ?, ?, ?, ?)")) {
            st.setString(1, id);
            st.setString(2, "order");
            st.setString(3, Long.toString(orderId));
            st.setString(4, type);
            st.setInt(5, 1);
            st.setString(6, payload);
            st.executeUpdate();
        }
        return id;
    }

    public static Created createOrder(Connection c, long customerId, BigDecimal total)
            throws SQLException, CreditLimitExceeded {
        c.setAutoCommit(false);
        try {
            long orderId;
            try (PreparedStatement st = c.prepareStatement(
                    "INSERT INTO orders (customer_id, total_amount, status) VALUES (?, ?, 'created')",
                    Statement.RETURN_GENERATED_KEYS)) {
                st.setLong(1, customerId);
                st.setBigDecimal(2, total);
                st.executeUpdate();
                try (ResultSet keys = st.getGeneratedKeys()) {
                    keys.next();
                    orderId = keys.getLong(1);
                }
            }
            String eventId = addEvent(c, orderId, "order.created", String.format(
                    "{\"order_id\":%d,\"customer_id\":%d,\"total_amount\":\"%s\"}", orderId, customerId, total.toPlainString()));
            if (total.compareTo(new BigDecimal("1000")) > 0) {
                throw new CreditLimitExceeded("order " + orderId + ": " + total + " is over the credit limit");
            }
            c.commit();
            return new Created(orderId, eventId);
        } catch (SQLException | CreditLimitExceeded | RuntimeException e) {
            c.rollback(); // the order and its event are gone, never published
            throw e;
        }
    }

    /** Returns the event's id, or null when the order was not open. */
    public static String cancelOrder(Connection c, long orderId) throws SQLException {
        c.setAutoCommit(false);
        try {
            try (PreparedStatement st = c.prepareStatement(
                    "UPDATE orders SET status = 'cancelled' WHERE id = ? AND status = 'created'")) {
                st.setLong(1, orderId);
                if (st.executeUpdate() == 0) {
                    c.rollback();
                    return null;
                }
            }
            String eventId = addEvent(c, orderId, "order.cancelled",
                    String.format("{\"order_id\":%d,\"reason\":\"customer request\"}", orderId));
            c.commit();
            return eventId;
        } catch (SQLException | RuntimeException e) {
            c.rollback();
            throw e;
        }
    }
}
