//! Only tests.
