//! Arbitrary bytes into the key functions: parse, `key_between`, `n_keys_between`,
//! `key_between_unique`. Nothing may panic, and every key returned must be valid and
//! strictly between its bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ordered_core::key::{self, Alphabet};

fuzz_target!(|data: &[u8]| {
    let split = data.first().map_or(0, |b| *b as usize) % (data.len().max(1));
    let (a, b) = data.split_at(split);
    let a = String::from_utf8_lossy(a);
    let b = String::from_utf8_lossy(b);
    let n = data.last().map_or(0, |b| *b as usize % 40);
    for alphabet in [Alphabet::BASE62, Alphabet::BASE95] {
        let _ = alphabet.validate(&a);
        for (lo, hi) in [(Some(&*a), Some(&*b)), (Some(&*a), None), (None, Some(&*b))] {
            if let Ok(k) = alphabet.key_between(lo, hi) {
                assert!(alphabet.validate(&k).is_ok());
                assert!(lo.is_none_or(|lo| lo < k.as_str()) && hi.is_none_or(|hi| k.as_str() < hi));
            }
            if let Ok(ks) = alphabet.n_keys_between(lo, hi, n) {
                assert_eq!(ks.len(), n);
                assert!(ks.windows(2).all(|w| w[0] < w[1]));
            }
            let _ = alphabet.key_between_unique(lo, hi, "r7");
        }
    }
    let _ = key::validate(&a);
});
