//! Exact combinatorics.
