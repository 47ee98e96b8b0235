//! Seeded generation of schemas, data, transactions and submit orders.
