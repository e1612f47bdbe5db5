//! Benchmarks only: see benches/index.rs.
