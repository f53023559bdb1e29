//! Position strategies: how a position is chosen between two neighbours, and how a run
//! of items is spread when there is no room.

use std::fmt::Debug;

use crate::error::Error;
use crate::key::Alphabet;
use crate::position::{MAX_POSITION, MIN_POSITION, Num, Position, PositionKind};

/// How [`PositionStrategy::spread`] should judge a run of positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpreadMode {
    /// A relabel window: accept only if the window is sparse enough that the next
    /// inserts into it are cheap (the density threshold of list labelling).
    Window,
    /// Accept any spread that fits between the bounds.
    Fit,
}

/// Positions for a run of `n` items, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spread {
    /// `first, first + step, first + 2 * step, ...`: executed as one set-based
    /// statement that ranks the rows in SQL.
    Arithmetic {
        /// The first position.
        first: i64,
        /// The distance between consecutive positions (at least 1).
        step: i64,
    },
    /// Explicit positions, written in chunked `CASE` statements.
    Explicit(Vec<Position>),
}

impl Spread {
    /// The `i`-th position of the run.
    pub fn nth(&self, i: u64) -> Option<Position> {
        match self {
            Spread::Arithmetic { first, step } => i64::try_from(i)
                .ok()
                .and_then(|i| i.checked_mul(*step))
                .and_then(|o| o.checked_add(*first))
                .map(Position::Int),
            Spread::Explicit(v) => usize::try_from(i).ok().and_then(|i| v.get(i).cloned()),
        }
    }
}

/// A way of assigning positions. Implement it to add your own; the planner only relies
/// on the documented contract of each method.
///
/// # Invariants
/// Implementations must guarantee, for every input they accept:
/// - [`between`](Self::between) returns a position strictly between the bounds, or
///   `Ok(None)` when there is no room (never a panic, never an out-of-domain value);
/// - [`spread`](Self::spread) returns `n` strictly increasing positions strictly between
///   the bounds, or `Ok(None)` when they do not fit (or, in [`SpreadMode::Window`], when
///   the window is too dense);
/// - every position returned passes [`check`](Self::check).
pub trait PositionStrategy: Debug + Send + Sync {
    /// What the column stores.
    fn kind(&self) -> PositionKind;
    /// Whether `p` is a valid live position of this strategy.
    fn check(&self, p: &Position) -> Result<(), Error>;
    /// A position strictly between `lo` and `hi` (`None`: the list's start or end), or
    /// `Ok(None)` when no position fits.
    fn between(
        &self,
        lo: Option<&Position>,
        hi: Option<&Position>,
    ) -> Result<Option<Position>, Error>;
    /// `n` positions strictly between `lo` and `hi`, or `Ok(None)`.
    fn spread(
        &self,
        lo: Option<&Position>,
        hi: Option<&Position>,
        n: u64,
        mode: SpreadMode,
    ) -> Result<Option<Spread>, Error>;
    /// Dense strategies keep positions `0..n` and shift rows instead of finding gaps.
    fn is_dense(&self) -> bool {
        false
    }
}

fn int_of(p: Option<&Position>, s: &dyn PositionStrategy) -> Result<Option<i64>, Error> {
    match p {
        None => Ok(None),
        Some(p) => {
            s.check(p)?;
            Ok(p.as_int())
        }
    }
}

/// Gapped integers: positions in `[1, 2^62 - 1]`, `spacing` apart when appended, a
/// midpoint when inserted between two items, [`front_step`](Gapped::front_step) below the
/// first item when placed at the start (the end has room up to `2^62`, the start only as
/// much as the first position).
///
/// # Invariants
/// - Every position is inside `[MIN_POSITION, MAX_POSITION]`, so negating it into the
///   temporary range, differences and midpoints never overflow; all arithmetic is
///   checked.
/// - "No room" is `Ok(None)`, never a panic.
/// - In [`SpreadMode::Window`] a run of `n` positions over a span `s` is accepted only if
///   its step is at least 2 and `n <= s^(1 - log2 density)`: the density threshold that
///   makes a relabel window grow geometrically until it is sparse enough (list labelling,
///   Bender et al. 2002), so that a hot gap costs amortized polylogarithmic rows per
///   insert instead of the whole collection. A window that starts at the first item is
///   instead packed `front_step` apart against its upper bound, and accepted when that
///   takes at most a quarter of the room below it, so that the start has room again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gapped {
    spacing: i64,
    exponent: f64,
}

impl Gapped {
    /// Spacing 1024, density threshold base `sqrt(2)`: a window of `n` items over a span
    /// `s` is accepted when `n <= sqrt(s)`.
    pub const DEFAULT: Gapped = Gapped::new(1024);

    /// Gapped integers `spacing` apart (clamped to `2..=2^40`).
    pub const fn new(spacing: i64) -> Gapped {
        let spacing = if spacing < 2 {
            2
        } else if spacing > 1 << 40 {
            1 << 40
        } else {
            spacing
        };
        Gapped {
            spacing,
            exponent: 0.5,
        }
    }

    /// Sets the density threshold base `t` (between 1 and 2, exclusive; clamped): a
    /// window over a span `s` may hold `s^(1 - log2 t)` items. Larger values relabel
    /// larger windows less often (fewer rows amortized, a larger worst case); the
    /// default `sqrt(2)` measured 3.7 rows per insert on a 100,000-insert hot gap in the
    /// middle of a 100,000-item list, against 4,546 for whole-list relabels.
    pub fn with_density(mut self, t: f64) -> Gapped {
        let t = if t.is_finite() {
            t.clamp(1.01, 1.99)
        } else {
            std::f64::consts::SQRT_2
        };
        self.exponent = 1.0 - t.log2();
        self
    }

    /// The spacing between appended items.
    pub const fn spacing(&self) -> i64 {
        self.spacing
    }

    /// How far below the first item an item placed at the start of a list goes (midpoints
    /// once that no longer fits), and how far apart a relabel at the start packs items: a
    /// thirty-second of the spacing (32 for the default), at least 2. The start has only
    /// as much room as the first position (`spacing` after a rebalance), so it is spent in
    /// small even steps instead of the spacing or halvings.
    pub const fn front_step(&self) -> i64 {
        let g = self.spacing / 32;
        if g < 2 { 2 } else { g }
    }
}

impl Default for Gapped {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl PositionStrategy for Gapped {
    fn kind(&self) -> PositionKind {
        PositionKind::Integer
    }

    fn check(&self, p: &Position) -> Result<(), Error> {
        match p {
            Position::Int(v) if (MIN_POSITION..=MAX_POSITION).contains(v) => Ok(()),
            Position::Int(_) => Err(Error::InvalidPosition {
                position: p.clone(),
                reason: "outside the gapped domain [1, 2^62 - 1]",
            }),
            _ => Err(Error::InvalidPosition {
                position: p.clone(),
                reason: "not an integer where an integer was expected",
            }),
        }
    }

    fn between(
        &self,
        lo: Option<&Position>,
        hi: Option<&Position>,
    ) -> Result<Option<Position>, Error> {
        let (lo, hi) = (int_of(lo, self)?, int_of(hi, self)?);
        let s = self.spacing;
        let p = match (lo, hi) {
            (None, None) => Some(s),
            (Some(a), None) => match a.checked_add(s) {
                Some(p) if p <= MAX_POSITION => Some(p),
                _ => mid(a, MAX_POSITION + 1),
            },
            // the start is the one end with little room (a rebalance starts at `spacing`):
            // below the first item step by the front step while it fits, then halve
            (None, Some(b)) => match b.checked_sub(self.front_step()) {
                Some(p) if p >= MIN_POSITION => Some(p),
                _ => mid(MIN_POSITION - 1, b),
            },
            (Some(a), Some(b)) if a < b => mid(a, b),
            (Some(_), Some(_)) => None,
        };
        Ok(p.map(Position::Int))
    }

    fn spread(
        &self,
        lo: Option<&Position>,
        hi: Option<&Position>,
        n: u64,
        mode: SpreadMode,
    ) -> Result<Option<Spread>, Error> {
        let (lo_v, hi_v) = (int_of(lo, self)?, int_of(hi, self)?);
        let Ok(n) = i64::try_from(n) else {
            return Ok(None);
        };
        if n == 0 {
            return Ok(Some(Spread::Arithmetic {
                first: lo_v.unwrap_or(0).saturating_add(1),
                step: 1,
            }));
        }
        let slots = n.saturating_add(1);
        // A window that starts at the first item ("move to front" runs out of room there):
        // pack it `front_step` apart against `hi`, accepted only when it takes at most a
        // quarter of the room below `hi`. The three quarters left free at the start take
        // three times as many moves to the front (stepping by the same amount) as the
        // relabel wrote rows, instead of the ten halvings of the first gap the even spread
        // gave (10,000 moves to the front of 100,000 items: 1.2 rows per move, was 11).
        if matches!(mode, SpreadMode::Window)
            && lo_v.is_none()
            && let Some(r) = hi_v
        {
            let g = self.front_step();
            let fits = slots
                .checked_mul(g)
                .and_then(|packed| packed.checked_mul(4))
                .is_some_and(|room| room <= r);
            return Ok(fits.then(|| Spread::Arithmetic {
                first: r - n * g,
                step: g,
            }));
        }
        // the span a window of n items needs to pass the density threshold
        let need = {
            let dense_enough = (n as f64).powf(1.0 / self.exponent).ceil();
            let by_threshold = if dense_enough.is_finite() && dense_enough < MAX_POSITION as f64 {
                (dense_enough as i64).saturating_add(1)
            } else {
                i64::MAX
            };
            by_threshold.max(slots.saturating_mul(2))
        };
        // The whole list: `spacing` apart from `spacing` (the seeds' behaviour), wider
        // when the list is so large that windows at that density could never pass the
        // threshold again.
        let s = self.spacing.max(need / slots);
        if lo_v.is_none()
            && hi_v.is_none()
            && let Some(end) = s.checked_mul(n)
            && end <= MAX_POSITION
        {
            return Ok(Some(Spread::Arithmetic { first: s, step: s }));
        }
        let mut l = lo_v.unwrap_or(MIN_POSITION - 1);
        let mut r = hi_v.unwrap_or(MAX_POSITION + 1);
        // An open end takes the usual spacing, or the span the density threshold needs
        // if that is larger, instead of spreading over the whole free domain.
        let need = need.max(slots.saturating_mul(s));
        if hi_v.is_none() && lo_v.is_some() {
            r = r.min(l.saturating_add(need));
        }
        if lo_v.is_none() && hi_v.is_some() {
            l = l.max(r.saturating_sub(need));
        }
        if r <= l {
            return Ok(None);
        }
        let span = r - l;
        let step = span / slots;
        let ok = match mode {
            SpreadMode::Fit => step >= 1,
            SpreadMode::Window => step >= 2 && (n as f64) <= (span as f64).powf(self.exponent),
        };
        Ok(ok.then_some(Spread::Arithmetic {
            first: l + step,
            step,
        }))
    }
}

fn mid(a: i64, b: i64) -> Option<i64> {
    // a < b, both within [0, 2^62]: no overflow
    (b - a >= 2).then(|| a + (b - a) / 2)
}

/// Dense integers `0..n-1`: the position is the index. Inserting or moving shifts the
/// rows in between, so use it for small lists where a contiguous index matters.
///
/// # Invariants
/// - The positions of a collection are exactly `0..n`; every operation keeps them so.
/// - Shifts are set-based statements; a move rewrites the rows between its two ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dense;

impl PositionStrategy for Dense {
    fn kind(&self) -> PositionKind {
        PositionKind::Integer
    }

    fn check(&self, p: &Position) -> Result<(), Error> {
        match p {
            Position::Int(v) if (0..=MAX_POSITION).contains(v) => Ok(()),
            _ => Err(Error::InvalidPosition {
                position: p.clone(),
                reason: "a dense position is an index in [0, 2^62 - 1]",
            }),
        }
    }

    fn between(
        &self,
        lo: Option<&Position>,
        hi: Option<&Position>,
    ) -> Result<Option<Position>, Error> {
        let (lo, hi) = (int_of(lo, self)?, int_of(hi, self)?);
        Ok(match (lo, hi) {
            (None, None) => Some(Position::Int(0)),
            (Some(a), None) => a.checked_add(1).map(Position::Int),
            _ => None,
        })
    }

    fn spread(
        &self,
        _lo: Option<&Position>,
        _hi: Option<&Position>,
        _n: u64,
        _mode: SpreadMode,
    ) -> Result<Option<Spread>, Error> {
        Ok(Some(Spread::Arithmetic { first: 0, step: 1 }))
    }

    fn is_dense(&self) -> bool {
        true
    }
}

/// Fractional string keys compatible with Rocicorp's `fractional-indexing`, capped at
/// `max_len` bytes (default 64).
///
/// # Invariants
/// - Every key is valid in the alphabet and sorts by raw bytes.
/// - [`between`](PositionStrategy::between) never returns a key longer than `max_len`:
///   past the cap it answers "no room" and the planner re-keys a window.
/// - In [`SpreadMode::Window`] a re-keyed window is accepted only if its longest key is
///   at most half the cap, so that the next inserts into it have room to grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fractional {
    alphabet: Alphabet,
    max_len: usize,
}

impl Fractional {
    /// Base 62, keys of at most 64 bytes.
    pub const DEFAULT: Fractional = Fractional {
        alphabet: Alphabet::BASE62,
        max_len: 64,
    };

    /// Keys in `alphabet` of at most `max_len` bytes (clamped to `8..=255`).
    pub const fn new(alphabet: Alphabet, max_len: usize) -> Fractional {
        let max_len = if max_len < 8 {
            8
        } else if max_len > 255 {
            255
        } else {
            max_len
        };
        Fractional { alphabet, max_len }
    }

    /// The alphabet.
    pub const fn alphabet(&self) -> Alphabet {
        self.alphabet
    }

    /// The cap on key length in bytes.
    pub const fn max_len(&self) -> usize {
        self.max_len
    }

    fn key_of<'p>(&self, p: Option<&'p Position>) -> Result<Option<&'p str>, Error> {
        match p {
            None => Ok(None),
            Some(Position::Key(k)) => {
                self.alphabet.validate(k)?;
                Ok(Some(k))
            }
            Some(p) => Err(Error::InvalidPosition {
                position: p.clone(),
                reason: "an integer where a key was expected",
            }),
        }
    }
}

impl Default for Fractional {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl PositionStrategy for Fractional {
    fn kind(&self) -> PositionKind {
        PositionKind::Key {
            max_len: self.max_len,
        }
    }

    fn check(&self, p: &Position) -> Result<(), Error> {
        self.key_of(Some(p)).map(|_| ())
    }

    fn between(
        &self,
        lo: Option<&Position>,
        hi: Option<&Position>,
    ) -> Result<Option<Position>, Error> {
        let (a, b) = (self.key_of(lo)?, self.key_of(hi)?);
        match self.alphabet.key_between(a, b) {
            Ok(k) if k.len() <= self.max_len => Ok(Some(Position::Key(k))),
            Ok(_) => Ok(None),
            // the integer head cannot grow or shrink further: no room, relabel
            Err(crate::key::KeyError::CannotIncrement { .. })
            | Err(crate::key::KeyError::CannotDecrement { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn spread(
        &self,
        lo: Option<&Position>,
        hi: Option<&Position>,
        n: u64,
        mode: SpreadMode,
    ) -> Result<Option<Spread>, Error> {
        let (a, b) = (self.key_of(lo)?, self.key_of(hi)?);
        let Ok(n) = usize::try_from(n) else {
            return Ok(None);
        };
        let keys = match self.alphabet.n_keys_between(a, b, n) {
            Ok(k) => k,
            Err(crate::key::KeyError::CannotIncrement { .. })
            | Err(crate::key::KeyError::CannotDecrement { .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let longest = keys.iter().map(String::len).max().unwrap_or(0);
        let cap = match mode {
            SpreadMode::Window => self.max_len / 2,
            SpreadMode::Fit => self.max_len,
        };
        Ok((longest <= cap)
            .then(|| Spread::Explicit(keys.into_iter().map(Position::Key).collect())))
    }
}

/// Numeric positions: a `DOUBLE PRECISION` column as Trello-style boards keep it
/// (appended `spacing` apart, 65,535 by default; dropped at the midpoint of the
/// neighbours), or an exact `NUMERIC(precision, scale)` column ([`Numeric::decimal`]).
///
/// A midpoint cannot be taken for ever: an `f64` midpoint between 0.5 and 1.0 can be
/// taken 52 times before it equals a neighbour, and a decimal runs out at its scale. So
/// a gap counts as full *before* that: when the midpoint would be closer than
/// [`min_gap`](Numeric::min_gap) to a neighbour (`2^-20` for floats by default, one unit
/// of the last digit for decimals), or would equal one. Then the planner relabels a
/// window around the gap under the lock, as it does for gapped integers, with the same
/// density threshold measured in units of `min_gap`.
///
/// # Invariants
/// - Every position is a finite number in `[0, max]` ([`Numeric::max`]: `2^53` for
///   floats, `10^(precision - scale) - 2` for decimals), never `-0.0`, and for a decimal
///   on its scale's grid. Below 0 is the temporary range that MySQL and SQLite relabel
///   through (`-position - 1`).
/// - [`between`](PositionStrategy::between) returns a position at least `min_gap` from
///   both neighbours, or "no room"; [`spread`](PositionStrategy::spread) positions at
///   least `min_gap` apart.
/// - A decimal has at most 15 digits, so that every value is exact as an `f64` and the
///   database's decimal reads back as the same number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Numeric {
    spacing: f64,
    min_gap: f64,
    max: f64,
    decimal: Option<(u8, u8)>,
}

const fn pow10(n: u8) -> f64 {
    let mut v = 1.0;
    let mut i = 0;
    while i < n {
        v *= 10.0;
        i += 1;
    }
    v
}

impl Numeric {
    /// Floats 65,535 apart when appended, a gap full under `2^-20`.
    pub const FLOAT: Numeric = Numeric {
        spacing: 65_535.0,
        min_gap: 1.0 / 1_048_576.0,
        max: 9_007_199_254_740_992.0,
        decimal: None,
    };

    /// Floats `spacing` apart when appended (clamped to `[2^-10, 2^40]`).
    pub const fn float(spacing: f64) -> Numeric {
        Numeric::FLOAT.with_spacing(spacing)
    }

    /// An exact `NUMERIC(precision, scale)` column: `precision` clamped to `2..=15`,
    /// `scale` to below it. Appended `10^((precision - scale) / 2)` apart (a million
    /// appends before the largest value and a million grid points between neighbours
    /// for `NUMERIC(12, 6)`), a gap full under one unit of the scale.
    pub const fn decimal(precision: u8, scale: u8) -> Numeric {
        let precision = if precision < 2 {
            2
        } else if precision > 15 {
            15
        } else {
            precision
        };
        let scale = if scale >= precision {
            precision - 1
        } else {
            scale
        };
        let int_digits = precision - scale;
        Numeric {
            spacing: pow10(int_digits / 2),
            min_gap: 1.0 / pow10(scale),
            max: pow10(int_digits) - 2.0,
            decimal: Some((precision, scale)),
        }
    }

    /// Sets the spacing between appended items (clamped to `[2^-10, 2^40]`, and for a
    /// decimal to at least one unit and at most a tenth of the largest value).
    pub const fn with_spacing(mut self, spacing: f64) -> Numeric {
        let mut s = if spacing.is_nan() {
            self.spacing
        } else {
            spacing
        };
        if s < 1.0 / 1024.0 {
            s = 1.0 / 1024.0;
        }
        if s > 1_099_511_627_776.0 {
            s = 1_099_511_627_776.0;
        }
        if self.decimal.is_some() {
            if s < self.min_gap {
                s = self.min_gap;
            }
            if s > self.max / 10.0 {
                s = self.max / 10.0;
            }
        }
        self.spacing = s;
        self
    }

    /// Sets the smallest gap a midpoint may leave to a neighbour before the gap counts
    /// as full (clamped to at least `2^-60`, and for a decimal to at least one unit of
    /// its scale). Larger values relabel sooner and keep positions readable.
    pub const fn with_min_gap(mut self, gap: f64) -> Numeric {
        let floor = match self.decimal {
            Some(_) => self.min_gap,
            None => 1.0 / 1_152_921_504_606_846_976.0,
        };
        self.min_gap = if gap.is_nan() || gap < floor {
            floor
        } else {
            gap
        };
        self
    }

    /// The spacing between appended items.
    pub const fn spacing(&self) -> f64 {
        self.spacing
    }

    /// The smallest gap a midpoint may leave.
    pub const fn min_gap(&self) -> f64 {
        self.min_gap
    }

    /// The largest position.
    pub const fn max(&self) -> f64 {
        self.max
    }

    /// `(precision, scale)` of a decimal.
    pub const fn decimal_digits(&self) -> Option<(u8, u8)> {
        self.decimal
    }

    /// `v` on the scale's grid (a float: itself).
    fn grid(&self, v: f64) -> f64 {
        match self.decimal {
            Some((_, s)) => {
                let f = pow10(s);
                (v * f).round() / f
            }
            None => v,
        }
    }

    fn num_of(&self, p: Option<&Position>) -> Result<Option<f64>, Error> {
        match p {
            None => Ok(None),
            Some(p) => {
                self.check(p)?;
                Ok(p.as_num())
            }
        }
    }

    /// `m` is a valid position strictly between `a` and `b` (exclusive bounds, `None`:
    /// open), at least `min_gap` from each.
    fn fits(&self, a: Option<f64>, m: f64, b: Option<f64>) -> bool {
        m.is_finite()
            && (0.0..=self.max).contains(&m)
            && a.is_none_or(|a| m > a && m - a >= self.min_gap)
            && b.is_none_or(|b| m < b && b - m >= self.min_gap)
    }

    fn pos(&self, v: f64) -> Option<Position> {
        // 0.0 - 0.0 is 0.0, but a rounding may still give -0.0
        let v = if v == 0.0 { 0.0 } else { v };
        Num::new(v).map(Position::Num)
    }
}

impl Default for Numeric {
    fn default() -> Self {
        Self::FLOAT
    }
}

impl PositionStrategy for Numeric {
    fn kind(&self) -> PositionKind {
        match self.decimal {
            Some((precision, scale)) => PositionKind::Decimal { precision, scale },
            None => PositionKind::Float,
        }
    }

    fn check(&self, p: &Position) -> Result<(), Error> {
        let bad = |reason| {
            Err(Error::InvalidPosition {
                position: p.clone(),
                reason,
            })
        };
        match p {
            Position::Num(n) => {
                let v = n.get();
                if !(0.0..=self.max).contains(&v) {
                    return bad("outside the numeric domain [0, max]");
                }
                if self.decimal.is_some() && self.grid(v) != v {
                    return bad("not a decimal of the column's scale");
                }
                Ok(())
            }
            // a value read that is not a number at all (NaN, an infinity, -0)
            Position::Key(_) => bad("not a finite number (NaN, an infinity or -0)"),
            Position::Int(_) => bad("an integer where a number was expected"),
        }
    }

    fn between(
        &self,
        lo: Option<&Position>,
        hi: Option<&Position>,
    ) -> Result<Option<Position>, Error> {
        let (a, b) = (self.num_of(lo)?, self.num_of(hi)?);
        let m = match (a, b) {
            (None, None) => self.grid(self.spacing.min(self.max)),
            (Some(a), None) => {
                let up = self.grid(a + self.spacing);
                if up <= self.max {
                    up
                } else {
                    self.grid(a + (self.max - a) / 2.0)
                }
            }
            (None, Some(b)) => {
                let down = self.grid(b - self.spacing);
                if down > 0.0 { down } else { self.grid(b / 2.0) }
            }
            (Some(a), Some(b)) => self.grid(a + (b - a) / 2.0),
        };
        // the end has room up to `max` inclusive, the start down to 0 exclusive
        Ok(if self.fits(Some(a.unwrap_or(0.0)), m, b) {
            self.pos(m)
        } else {
            None
        })
    }

    fn spread(
        &self,
        lo: Option<&Position>,
        hi: Option<&Position>,
        n: u64,
        mode: SpreadMode,
    ) -> Result<Option<Spread>, Error> {
        let (a, b) = (self.num_of(lo)?, self.num_of(hi)?);
        if n == 0 {
            return Ok(Some(Spread::Explicit(Vec::new())));
        }
        if n > 100_000_000 {
            return Ok(None);
        }
        let nf = n as f64;
        // A window that starts at the first item (a hot gap right after it, or moves to
        // the front): packed a thirty-second of the spacing apart against its upper
        // bound, accepted when that takes at most a quarter of the room below it, so
        // that the start has room again (as gapped integers do)
        if matches!(mode, SpreadMode::Window)
            && a.is_none()
            && let Some(r) = b
        {
            let g = self.grid((self.spacing / 32.0).max(2.0 * self.min_gap));
            if g > 0.0 && (nf + 1.0) * g * 4.0 <= r {
                let mut out = Vec::with_capacity(n as usize);
                for i in (1..=n).rev() {
                    let v = self.grid(r - (i as f64) * g);
                    match self.pos(v) {
                        Some(p) if v > 0.0 => out.push(p),
                        _ => return Ok(None),
                    }
                }
                let apart = out.windows(2).all(|w| w[0] < w[1]);
                if apart {
                    return Ok(Some(Spread::Explicit(out)));
                }
            }
            return Ok(None);
        }
        let l = a.unwrap_or(0.0);
        let r = match b {
            Some(b) => b,
            None => {
                // the usual spacing, or the span the density threshold needs, up to max
                let need = nf * nf * self.min_gap;
                (l + ((nf + 1.0) * self.spacing).max(need)).min(self.max)
            }
        };
        if r <= l {
            return Ok(None);
        }
        let step = (r - l) / (nf + 1.0);
        let ok = match mode {
            SpreadMode::Fit => step >= self.min_gap,
            SpreadMode::Window => {
                step >= 2.0 * self.min_gap && nf <= ((r - l) / self.min_gap).sqrt()
            }
        };
        if !ok {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(n as usize);
        let mut prev = a;
        for i in 1..=n {
            let v = self.grid(l + (i as f64) * step);
            // strictly inside, `min_gap` apart; the last one also from the upper bound
            let next = if i == n { b } else { None };
            if !self.fits(Some(prev.unwrap_or(-self.min_gap)), v, next) {
                return Ok(None);
            }
            match self.pos(v) {
                Some(p) => out.push(p),
                None => return Ok(None),
            }
            prev = Some(v);
        }
        Ok(Some(Spread::Explicit(out)))
    }
}

/// What to do when no position fits between two neighbours.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RebalancePolicy {
    /// Refuse with [`Error::Exhausted`]; the application calls `rebalance` itself.
    Never,
    /// Spread the whole collection evenly (the seeds' behaviour).
    Whole,
    /// Relabel the smallest neighbourhood of the gap that is sparse enough, widening
    /// geometrically (the default).
    #[default]
    Window,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gapped_ends_never_overflow() {
        let g = Gapped::DEFAULT;
        let top = Position::Int(MAX_POSITION - 1);
        let p = g.between(Some(&top), None).unwrap().unwrap();
        assert_eq!(p, Position::Int(MAX_POSITION));
        assert_eq!(
            g.between(Some(&Position::Int(MAX_POSITION)), None).unwrap(),
            None
        );
        let bottom = Position::Int(MIN_POSITION + 1);
        assert_eq!(
            g.between(None, Some(&bottom)).unwrap(),
            Some(Position::Int(1))
        );
        assert_eq!(g.between(None, Some(&Position::Int(1))).unwrap(), None);
        let wide = g
            .between(Some(&Position::Int(1)), Some(&Position::Int(MAX_POSITION)))
            .unwrap()
            .unwrap();
        assert!(wide.as_int().unwrap() > 1);
        assert!(g.between(Some(&Position::Int(0)), None).is_err());
        assert!(g.between(Some(&Position::Int(i64::MAX)), None).is_err());
        assert!(g.between(Some(&Position::Int(i64::MIN)), None).is_err());
        assert!(g.between(Some(&Position::Key("a0".into())), None).is_err());
    }

    #[test]
    fn gapped_window_threshold_grows_with_span() {
        let g = Gapped::DEFAULT;
        let (a, b) = (Position::Int(1000), Position::Int(1010));
        // 8 items in a span of 10: too dense for a window, fine to fit
        assert_eq!(
            g.spread(Some(&a), Some(&b), 8, SpreadMode::Window).unwrap(),
            None
        );
        assert!(
            g.spread(Some(&a), Some(&b), 8, SpreadMode::Fit)
                .unwrap()
                .is_some()
        );
        let c = Position::Int(1000 + 4096);
        assert!(
            g.spread(Some(&a), Some(&c), 8, SpreadMode::Window)
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn gapped_start_steps_below_the_first_item_and_packs_a_start_window() {
        let g = Gapped::DEFAULT;
        assert_eq!(g.front_step(), 32);
        let at = |b: i64| g.between(None, Some(&Position::Int(b))).unwrap();
        assert_eq!(at(1024), Some(Position::Int(992)));
        assert_eq!(at(32), Some(Position::Int(16)), "then halving");
        assert_eq!(at(1), None);
        // 9 items (and the hole) below 10,000: packed 32 apart against it, the rest free
        let hi = Position::Int(10_000);
        match g.spread(None, Some(&hi), 10, SpreadMode::Window).unwrap() {
            Some(Spread::Arithmetic { first, step }) => {
                assert_eq!((first, step), (10_000 - 10 * 32, 32));
            }
            other => panic!("{other:?}"),
        }
        // too dense: 10 items would take more than a quarter of the room below 1,000
        let hi = Position::Int(1_000);
        assert_eq!(
            g.spread(None, Some(&hi), 10, SpreadMode::Window).unwrap(),
            None
        );
        // the whole list is still spread from `spacing`, `spacing` apart
        assert_eq!(
            g.spread(None, None, 10, SpreadMode::Fit).unwrap(),
            Some(Spread::Arithmetic {
                first: 1024,
                step: 1024
            })
        );
        assert_eq!(Gapped::new(8).front_step(), 2);
    }

    #[test]
    fn fractional_caps_length() {
        let f = Fractional::new(Alphabet::BASE62, 8);
        let a = Position::Key("a0".into());
        let b = Position::Key("a0000001".into());
        assert_eq!(f.between(Some(&a), Some(&b)).unwrap(), None);
        assert!(f.between(Some(&a), None).unwrap().is_some());
        assert!(f.between(Some(&Position::Key("a00".into())), None).is_err());
    }
}
