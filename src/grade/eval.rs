//! Evaluation of expression trees: exact rationals where possible, complex floats at sample points.

use super::expr::Node;
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, ToPrimitive, Zero};

/// Largest integer exponent evaluated exactly; bigger powers go to floats.
const MAX_EXACT_EXP: u64 = 512;
/// Cap on the bit size of exact intermediate results (keeps `10^{10^{10}}` cheap).
const MAX_EXACT_BITS: u64 = 8_192;
/// Number of deterministic sample points used for symbolic comparison.
pub const POINTS: u64 = 4;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct C {
    pub re: f64,
    pub im: f64,
}

impl C {
    pub const fn real(re: f64) -> C {
        C { re, im: 0.0 }
    }
    pub fn abs(self) -> f64 {
        self.re.hypot(self.im)
    }
    fn add(self, o: C) -> C {
        C {
            re: self.re + o.re,
            im: self.im + o.im,
        }
    }
    pub fn sub(self, o: C) -> C {
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
    pub fn div(self, o: C) -> Option<C> {
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
        let m = self.re.exp();
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
                acc = acc.mul(base);
            }
            base = base.mul(base);
            e >>= 1;
        }
        Some(acc)
    }
    fn pow(self, e: C) -> Option<C> {
        if e.im == 0.0 && e.re.fract() == 0.0 && e.re.abs() <= 1_000.0 {
            return self.powi(e.re as i64);
        }
        if self.im == 0.0 && self.re > 0.0 && e.im == 0.0 {
            return Some(C::real(self.re.powf(e.re)));
        }
        if self.im == 0.0 && self.re < 0.0 && e.im == 0.0 {
            // Real odd roots of negatives (`\sqrt[3]{-8}`) stay real.
            let inv = 1.0 / e.re;
            if (inv.round() - inv).abs() < 1e-12 && (inv.round() as i64) % 2 != 0 {
                return Some(C::real(-(-self.re).powf(e.re)));
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
    pub fn finite(self) -> bool {
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

pub fn to_f64(q: &BigRational) -> Option<f64> {
    let v = q.to_f64()?;
    v.is_finite().then_some(v)
}

/// Exact rational value, when the tree is a rational number.
pub fn exact(n: &Node) -> Option<BigRational> {
    Some(match n {
        Node::Num(q, _) => q.clone(),
        Node::Neg(a) => -exact(a)?,
        Node::Add(v) => {
            let mut acc = BigRational::zero();
            for x in v {
                acc += exact(x)?;
                bounded(&acc)?;
            }
            acc
        }
        Node::Mul(v) => {
            let mut acc = BigRational::from_integer(BigInt::from(1));
            for x in v {
                acc *= exact(x)?;
                bounded(&acc)?;
            }
            acc
        }
        Node::Div(a, b) => {
            let d = exact(b)?;
            if d.is_zero() {
                return None;
            }
            exact(a)? / d
        }
        Node::Pow(a, b) => {
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
        Node::Fact(a) => {
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
        Node::Call(name, args) if name == "sqrt" && args.len() == 1 => {
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

fn bounded(q: &BigRational) -> Option<()> {
    (q.numer().bits() <= MAX_EXACT_BITS && q.denom().bits() <= MAX_EXACT_BITS).then_some(())
}

/// True when some literal in the tree was written as a decimal.
pub fn has_decimal(n: &Node) -> bool {
    match n {
        Node::Num(_, d) => *d,
        Node::Neg(a) | Node::Fact(a) => has_decimal(a),
        Node::Add(v) | Node::Mul(v) | Node::Call(_, v) => v.iter().any(has_decimal),
        Node::Div(a, b) | Node::Pow(a, b) | Node::Pm(a, b) => has_decimal(a) || has_decimal(b),
        _ => false,
    }
}

/// Complex value at sample point `pt`; `None` when undefined or not a scalar.
pub fn eval(n: &Node, pt: u64) -> Option<C> {
    let v = eval_inner(n, pt, 0)?;
    v.finite().then_some(v)
}

fn eval_inner(n: &Node, pt: u64, depth: usize) -> Option<C> {
    if depth > 200 {
        return None;
    }
    let ev = |x: &Node| eval_inner(x, pt, depth + 1);
    let v = match n {
        Node::Num(q, _) => C::real(to_f64(q)?),
        Node::Sym(name) => C::real(unit(name, pt, 0)),
        Node::Pi => C::real(std::f64::consts::PI),
        Node::E => C::real(std::f64::consts::E),
        Node::I => C { re: 0.0, im: 1.0 },
        Node::Neg(a) => ev(a)?.neg(),
        Node::Add(v) => {
            let mut acc = C::real(0.0);
            for x in v {
                acc = acc.add(ev(x)?);
            }
            acc
        }
        Node::Mul(v) => {
            let mut acc = C::real(1.0);
            for x in v {
                acc = acc.mul(ev(x)?);
            }
            acc
        }
        Node::Div(a, b) => {
            let d = ev(b)?;
            if d.abs() < 1e-300 {
                return None;
            }
            ev(a)?.div(d)?
        }
        Node::Pow(a, b) => ev(a)?.pow(ev(b)?)?,
        Node::Fact(a) => {
            let k = ev(a)?;
            if k.im != 0.0 || k.re < 0.0 || k.re.fract() != 0.0 || k.re > 170.0 {
                return None;
            }
            C::real((2..=k.re as u64).fold(1.0, |acc, i| acc * i as f64))
        }
        Node::Call(name, args) => call(name, args, pt, depth)?,
        _ => return None,
    };
    v.finite().then_some(v)
}

fn call(name: &str, args: &[Node], pt: u64, depth: usize) -> Option<C> {
    let ev = |x: &Node| eval_inner(x, pt, depth + 1);
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
        assert!((val("\\sec^2(y)").re - val("\\tan^2(y)+1").re).abs() < 1e-9);
    }
}
