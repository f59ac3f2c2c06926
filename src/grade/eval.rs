//! Evaluation of expression trees: exact rationals where possible, complex floats at sample points.

use super::expr::Expr;
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, ToPrimitive, Zero};

/// Largest integer exponent evaluated exactly (the bit cap below bounds the cost).
const MAX_EXACT_EXP: u64 = 8_192;
/// Largest determinant expanded by cofactors.
const MAX_DET: usize = 4;
/// Float results smaller than this (from non-zero inputs) have lost their value to underflow.
const UNDERFLOW: f64 = 1e-280;
/// Cap on the bit size of exact intermediate results (keeps `10^{10^{10}}` cheap).
const MAX_EXACT_BITS: u64 = 8_192;
/// Number of deterministic sample points used for symbolic comparison.
pub(super) const POINTS: u64 = 4;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct C {
    pub re: f64,
    pub im: f64,
}

impl C {
    pub(super) const fn real(re: f64) -> C {
        C { re, im: 0.0 }
    }
    pub(super) fn abs(self) -> f64 {
        self.re.hypot(self.im)
    }
    fn add(self, o: C) -> C {
        C {
            re: self.re + o.re,
            im: self.im + o.im,
        }
    }
    pub(super) fn sub(self, o: C) -> C {
        C {
            re: self.re - o.re,
            im: self.im - o.im,
        }
    }
    fn mul(self, o: C) -> C {
        C {
            re: self.re * o.re - self.im * o.im,
            im: self.re * o.im + self.im * o.re,
        }
    }
    /// A product that underflowed to (nearly) zero is unknown, not zero.
    fn mul_checked(self, o: C) -> Option<C> {
        let r = self.mul(o);
        let lost = r.tiny() && !self.is_zero() && !o.is_zero();
        (!lost).then_some(r)
    }
    fn tiny(self) -> bool {
        self.re.abs() < UNDERFLOW && self.im.abs() < UNDERFLOW
    }
    fn is_zero(self) -> bool {
        self.re == 0.0 && self.im == 0.0
    }
    pub(super) fn div(self, o: C) -> Option<C> {
        let d = o.re * o.re + o.im * o.im;
        if d == 0.0 || !d.is_finite() {
            return None;
        }
        Some(C {
            re: (self.re * o.re + self.im * o.im) / d,
            im: (self.im * o.re - self.re * o.im) / d,
        })
    }
    fn neg(self) -> C {
        C {
            re: -self.re,
            im: -self.im,
        }
    }
    fn exp(self) -> C {
        // Underflow gives NaN here, which makes the value unknown.
        let m = if self.re < -640.0 {
            f64::NAN
        } else {
            self.re.exp()
        };
        C {
            re: m * self.im.cos(),
            im: m * self.im.sin(),
        }
    }
    fn ln(self) -> Option<C> {
        let a = self.abs();
        (a > 0.0).then(|| C {
            re: a.ln(),
            im: self.im.atan2(self.re),
        })
    }
    fn sqrt(self) -> C {
        if self.im == 0.0 && self.re >= 0.0 {
            return C::real(self.re.sqrt());
        }
        let a = self.abs();
        let re = ((a + self.re) / 2.0).sqrt();
        let im = ((a - self.re) / 2.0)
            .sqrt()
            .copysign(if self.im == 0.0 { 1.0 } else { self.im });
        C { re, im }
    }
    fn powi(self, n: i64) -> Option<C> {
        let mut base = if n < 0 { C::real(1.0).div(self)? } else { self };
        let mut e = n.unsigned_abs();
        let mut acc = C::real(1.0);
        while e > 0 {
            if e & 1 == 1 {
                acc = acc.mul_checked(base)?;
            }
            e >>= 1;
            if e > 0 {
                base = base.mul_checked(base)?;
            }
        }
        Some(acc)
    }
    fn pow(self, e: C) -> Option<C> {
        if e.im == 0.0 && e.re.fract() == 0.0 && e.re.abs() <= 1_000.0 {
            return self.powi(e.re as i64);
        }
        if self.im == 0.0 && self.re > 0.0 && e.im == 0.0 {
            let r = self.re.powf(e.re);
            return (r >= UNDERFLOW).then_some(C::real(r));
        }
        if self.im == 0.0 && self.re < 0.0 && e.im == 0.0 {
            // Real odd roots of negatives stay real (`\sqrt[3]{-8}`, and `(-8)^{2/3}` = 4 as
            // `\sqrt[3]{-8}^2` is), so a power and a root written for the same value agree.
            for q in (1..=15).step_by(2) {
                let p = e.re * f64::from(q);
                if (p.round() - p).abs() < 1e-9 {
                    let r = (-self.re).powf(e.re);
                    let odd = (p.round() as i64) % 2 != 0;
                    return Some(C::real(if odd { -r } else { r }));
                }
            }
        }
        if self.abs() == 0.0 {
            return (e.re > 0.0).then_some(C::real(0.0));
        }
        Some(self.ln()?.mul(e).exp())
    }
    fn sin(self) -> C {
        C {
            re: self.re.sin() * self.im.cosh(),
            im: self.re.cos() * self.im.sinh(),
        }
    }
    fn cos(self) -> C {
        C {
            re: self.re.cos() * self.im.cosh(),
            im: -self.re.sin() * self.im.sinh(),
        }
    }
    pub(super) fn finite(self) -> bool {
        self.re.is_finite() && self.im.is_finite()
    }
}

fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Deterministic pseudo-random value in [0.5, 2.5) for a name at a sample point.
fn unit(name: &str, point: u64, salt: u64) -> f64 {
    let h = mix(fnv(name) ^ mix(point.wrapping_add(salt.wrapping_mul(0x1234_5678))));
    0.5 + 2.0 * ((h >> 11) as f64 / (1u64 << 53) as f64)
}

pub(super) fn to_f64(q: &BigRational) -> Option<f64> {
    let v = q.to_f64()?;
    v.is_finite().then_some(v)
}

/// Exact rational value, when the tree is a rational number.
pub(super) fn exact(n: &Expr) -> Option<BigRational> {
    Some(match n {
        Expr::Num(q, _) => q.clone(),
        Expr::Neg(a) => -exact(a)?,
        Expr::Add(v) => {
            let mut acc = BigRational::zero();
            for x in v {
                acc += exact(x)?;
                bounded(&acc)?;
            }
            acc
        }
        Expr::Mul(v) => {
            let mut acc = BigRational::from_integer(BigInt::from(1));
            for x in v {
                acc *= exact(x)?;
                bounded(&acc)?;
            }
            acc
        }
        Expr::Div(a, b) => {
            let d = exact(b)?;
            if d.is_zero() {
                return None;
            }
            exact(a)? / d
        }
        Expr::Pow(a, b) => {
            let e = exact(b)?;
            if !e.is_integer() {
                return None;
            }
            let e = e.to_integer();
            let mag = e.abs().to_u64()?;
            let base = exact(a)?;
            if mag > MAX_EXACT_EXP {
                return None;
            }
            let bits = base.numer().bits().max(base.denom().bits());
            if bits.saturating_mul(mag) > MAX_EXACT_BITS {
                return None;
            }
            if base.is_zero() && e.is_negative() {
                return None;
            }
            let p = num_traits::pow(base, mag as usize);
            if e.is_negative() {
                p.recip()
            } else {
                p
            }
        }
        Expr::Fact(a) => {
            let k = exact(a)?;
            if !k.is_integer() || k.is_negative() {
                return None;
            }
            let k = k.to_integer().to_u64()?;
            if k > 300 {
                return None;
            }
            let mut acc = BigInt::from(1);
            for i in 2..=k {
                acc *= i;
            }
            BigRational::from_integer(acc)
        }
        Expr::Call(name, args) if matches!(name.as_str(), "mod" | "det") => exact_call(name, args)?,
        Expr::Call(name, args) if name == "sqrt" && args.len() == 1 => {
            let v = exact(&args[0])?;
            if v.is_negative() {
                return None;
            }
            let (n, d) = (v.numer().sqrt(), v.denom().sqrt());
            if &(&n * &n) != v.numer() || &(&d * &d) != v.denom() {
                return None;
            }
            BigRational::new(n, d)
        }
        _ => return None,
    })
}

/// Determinant of a small square matrix by cofactor expansion (exact or float entries).
fn det<T: Clone>(
    m: &[Vec<T>],
    zero: T,
    mul: impl Fn(T, T) -> T + Copy,
    add: impl Fn(T, T) -> T + Copy,
    neg: impl Fn(T) -> T + Copy,
) -> Option<T> {
    let n = m.len();
    if n == 0 || n > MAX_DET || m.iter().any(|r| r.len() != n) {
        return None;
    }
    if n == 1 {
        return Some(m[0][0].clone());
    }
    let mut acc = zero.clone();
    for j in 0..n {
        let minor: Vec<Vec<T>> = m[1..]
            .iter()
            .map(|r| [&r[..j], &r[j + 1..]].concat())
            .collect();
        let term = mul(m[0][j].clone(), det(&minor, zero.clone(), mul, add, neg)?);
        acc = add(acc, if j % 2 == 0 { term } else { neg(term) });
    }
    Some(acc)
}

/// Exact `a mod m` of integers and determinants of rational matrices.
fn exact_call(name: &str, args: &[Expr]) -> Option<BigRational> {
    match (name, args) {
        ("mod", [a, m]) => {
            let (a, m) = (exact(a)?, exact(m)?);
            if !a.is_integer() || !m.is_integer() || m.is_zero() {
                return None;
            }
            let (a, m) = (a.to_integer(), m.to_integer());
            Some(BigRational::from_integer(((a % &m) + &m) % &m))
        }
        ("det", [Expr::Matrix(rows)]) => {
            let mut m = Vec::with_capacity(rows.len());
            for r in rows {
                m.push(r.iter().map(exact).collect::<Option<Vec<_>>>()?);
            }
            det(&m, BigRational::zero(), |a, b| a * b, |a, b| a + b, |a| -a)
        }
        _ => None,
    }
}

fn bounded(q: &BigRational) -> Option<()> {
    (q.numer().bits() <= MAX_EXACT_BITS && q.denom().bits() <= MAX_EXACT_BITS).then_some(())
}

/// True when some literal in the tree was written as a decimal.
pub(super) fn has_decimal(n: &Expr) -> bool {
    match n {
        Expr::Num(_, d) => *d,
        Expr::Neg(a) | Expr::Fact(a) => has_decimal(a),
        Expr::Add(v) | Expr::Mul(v) | Expr::Call(_, v) => v.iter().any(has_decimal),
        Expr::Div(a, b) | Expr::Pow(a, b) | Expr::Pm(a, b) => has_decimal(a) || has_decimal(b),
        _ => false,
    }
}

/// Complex value at sample point `pt`; `None` when undefined or not a scalar.
pub(super) fn eval(n: &Expr, pt: u64) -> Option<C> {
    let v = eval_inner(n, pt, 0)?;
    v.finite().then_some(v)
}

fn eval_inner(n: &Expr, pt: u64, depth: usize) -> Option<C> {
    if depth > 200 {
        return None;
    }
    let ev = |x: &Expr| eval_inner(x, pt, depth + 1);
    let v = match n {
        Expr::Num(q, _) => C::real(to_f64(q)?),
        Expr::Sym(name) => C::real(unit(name, pt, 0)),
        Expr::Pi => C::real(std::f64::consts::PI),
        Expr::E => C::real(std::f64::consts::E),
        Expr::I => C { re: 0.0, im: 1.0 },
        Expr::Neg(a) => ev(a)?.neg(),
        Expr::Add(v) => {
            let mut acc = C::real(0.0);
            for x in v {
                acc = acc.add(ev(x)?);
            }
            acc
        }
        Expr::Mul(v) => {
            let mut acc = C::real(1.0);
            for x in v {
                acc = acc.mul_checked(ev(x)?)?;
            }
            acc
        }
        Expr::Div(a, b) => {
            let d = ev(b)?;
            if d.abs() < 1e-300 {
                return None;
            }
            let n = ev(a)?;
            let q = n.div(d)?;
            if q.tiny() && !n.is_zero() {
                return None;
            }
            q
        }
        Expr::Pow(a, b) => ev(a)?.pow(ev(b)?)?,
        Expr::Fact(a) => {
            let k = ev(a)?;
            if k.im != 0.0 || k.re < 0.0 || k.re.fract() != 0.0 || k.re > 170.0 {
                return None;
            }
            C::real((2..=k.re as u64).fold(1.0, |acc, i| acc * i as f64))
        }
        Expr::Call(name, args) => call(name, args, pt, depth)?,
        _ => return None,
    };
    v.finite().then_some(v)
}

fn call(name: &str, args: &[Expr], pt: u64, depth: usize) -> Option<C> {
    let ev = |x: &Expr| eval_inner(x, pt, depth + 1);
    if name == "mod" && args.len() == 2 {
        let (a, m) = (ev(&args[0])?, ev(&args[1])?);
        if a.im != 0.0 || m.im != 0.0 || m.re == 0.0 {
            return None;
        }
        return Some(C::real(a.re - m.re * (a.re / m.re).floor()));
    }
    if name == "det" && args.len() == 1 {
        let Expr::Matrix(rows) = &args[0] else {
            return None;
        };
        let mut m = Vec::with_capacity(rows.len());
        for r in rows {
            m.push(r.iter().map(ev).collect::<Option<Vec<_>>>()?);
        }
        return det(&m, C::real(0.0), C::mul, C::add, C::neg);
    }
    if name == "binom" && args.len() == 2 {
        let n = ev(&args[0])?;
        let k = ev(&args[1])?;
        if n.im != 0.0 || k.im != 0.0 || k.re.fract() != 0.0 || !(0.0..=200.0).contains(&k.re) {
            return None;
        }
        let mut acc = 1.0;
        for i in 0..k.re as u64 {
            acc = acc * (n.re - i as f64) / (i as f64 + 1.0);
        }
        return Some(C::real(acc));
    }
    let [a] = args else { return None };
    let x = ev(a)?;
    let one = C::real(1.0);
    Some(match name {
        "sqrt" => x.sqrt(),
        "abs" => C::real(x.abs()),
        "sin" => x.sin(),
        "cos" => x.cos(),
        "tan" => x.sin().div(x.cos())?,
        "sec" => one.div(x.cos())?,
        "csc" => one.div(x.sin())?,
        "cot" => x.cos().div(x.sin())?,
        "exp" => x.exp(),
        "ln" => x.ln()?,
        "log" | "lg" => x.ln()?.div(C::real(std::f64::consts::LN_10))?,
        "sinh" => x.exp().sub(x.neg().exp()).div(C::real(2.0))?,
        "cosh" => x.exp().add(x.neg().exp()).div(C::real(2.0))?,
        "tanh" => x.exp().sub(x.neg().exp()).div(x.exp().add(x.neg().exp()))?,
        "arcsin" if x.im == 0.0 && x.re.abs() <= 1.0 => C::real(x.re.asin()),
        "arccos" if x.im == 0.0 && x.re.abs() <= 1.0 => C::real(x.re.acos()),
        "arctan" if x.im == 0.0 => C::real(x.re.atan()),
        "floor" if x.im == 0.0 => C::real(x.re.floor()),
        "ceil" if x.im == 0.0 => C::real(x.re.ceil()),
        _ => {
            // Unknown function (`f(x)`, `\sum_{k}`): a fixed smooth function chosen by its name.
            let (a, b) = (unit(name, 0, 7), unit(name, 0, 11));
            x.mul(C::real(a))
                .add(C::real(b))
                .sin()
                .add(x.mul(C::real(0.5)))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grade::expr::parse;

    fn val(s: &str) -> C {
        eval(&parse(s).unwrap(), 0).unwrap()
    }

    #[test]
    fn exact_rationals() {
        let q = exact(&parse("\\frac{10}{9}").unwrap()).unwrap();
        assert_eq!(q, BigRational::new(10.into(), 9.into()));
        assert!(exact(&parse("\\sqrt{2}").unwrap()).is_none());
        assert_eq!(
            exact(&parse("\\sqrt{49}").unwrap()),
            Some(BigRational::from_integer(7.into()))
        );
        assert_eq!(
            exact(&parse("5!").unwrap()),
            Some(BigRational::from_integer(120.into()))
        );
    }

    #[test]
    fn huge_powers_are_bounded() {
        assert!(exact(&parse("10^{10^{10}}").unwrap()).is_none());
        assert!(eval(&parse("10^{10^{10}}").unwrap(), 0).is_none());
    }

    #[test]
    fn complex_and_constants() {
        let v = val("i^2");
        assert!((v.re + 1.0).abs() < 1e-12 && v.im.abs() < 1e-12);
        assert!((val("\\pi").re - std::f64::consts::PI).abs() < 1e-12);
        assert!((val("\\sqrt[3]{-8}").re + 2.0).abs() < 1e-12);
        assert!((val("(-8)^{2/3}").re - 4.0).abs() < 1e-9);
        assert!((val("(-8)^{5/3}").re + 32.0).abs() < 1e-9);
        assert!((val("\\sec^2(y)").re - val("\\tan^2(y)+1").re).abs() < 1e-9);
    }
}
