//! The lenient fields of a chat reply, read straight from the body's bytes.
//!
//! Each reads exactly what `serde_json::Value` followed by [`super::text_of`], [`super::content_of`]
//! or `serde_json::from_value::<Usage>` would: any JSON value is accepted, the odd ones (an array
//! where a string belongs, …) are read whole as a `Value` and dropped, so a reply these accept or
//! reject is the same one; the usual ones (strings, a usage object) are read without building a
//! `Value` first.

use super::{content_of, lenient_count, lenient_details, TokenDetails, Usage};
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// A string field: the string, or None for null or any other value.
#[derive(Default)]
pub(super) struct Text(pub(super) Option<String>);

/// Message content: a string, or an array of parts joined as [`super::content_of`] does.
#[derive(Default)]
pub(super) struct Content(pub(super) Option<String>);

/// `usage`: the counts of an object, or None for anything that is not an object.
#[derive(Default)]
pub(super) struct LenientUsage(pub(super) Option<Usage>);

/// What an odd value (not the shape the field is after) comes to.
trait Odd: Sized {
    fn odd(v: serde_json::Value) -> Self;
}

/// Reads any JSON value: a string goes to `on_str`; arrays and objects are read whole as a `Value`
/// and handed to [`Odd::odd`], other scalars come to `T::odd(Null)`.
struct Any<T, S> {
    on_str: S,
    _t: std::marker::PhantomData<T>,
}

fn any<T: Odd, S: FnOnce(String) -> T>(on_str: S) -> Any<T, S> {
    Any {
        on_str,
        _t: std::marker::PhantomData,
    }
}

impl<'de, T: Odd, S: FnOnce(String) -> T> Visitor<'de> for Any<T, S> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<T, E> {
        Ok((self.on_str)(v.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<T, E> {
        Ok((self.on_str)(v))
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<T, E> {
        Ok(T::odd(serde_json::Value::Null))
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<T, E> {
        Ok(T::odd(serde_json::Value::Null))
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<T, E> {
        Ok(T::odd(serde_json::Value::Null))
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<T, E> {
        Ok(T::odd(serde_json::Value::Null))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<T, E> {
        Ok(T::odd(serde_json::Value::Null))
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<T, E> {
        Ok(T::odd(serde_json::Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        let v = serde_json::Value::deserialize(SeqAccessDeserializer::new(seq))?;
        Ok(T::odd(v))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        let v = serde_json::Value::deserialize(MapAccessDeserializer::new(map))?;
        Ok(T::odd(v))
    }
}

impl Odd for Text {
    fn odd(_: serde_json::Value) -> Text {
        Text(None)
    }
}

impl Odd for Content {
    fn odd(v: serde_json::Value) -> Content {
        // Only an array can hold text parts; content_of says None for every other odd value.
        Content(content_of(Some(v)))
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        d.deserialize_any(any(|s| Text(Some(s))))
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Content, D::Error> {
        d.deserialize_any(any(|s| Content(Some(s))))
    }
}

/// The `usage` keys that are read; any other is read as a `Value` and dropped.
enum UsageKey {
    Prompt,
    Completion,
    PromptDetails,
    CompletionDetails,
    Other,
}

impl<'de> Deserialize<'de> for UsageKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<UsageKey, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = UsageKey;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<UsageKey, E> {
                Ok(match v {
                    "prompt_tokens" => UsageKey::Prompt,
                    "completion_tokens" => UsageKey::Completion,
                    "prompt_tokens_details" => UsageKey::PromptDetails,
                    "completion_tokens_details" => UsageKey::CompletionDetails,
                    _ => UsageKey::Other,
                })
            }
        }
        d.deserialize_identifier(KeyVisitor)
    }
}

struct Count(Option<u64>);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Count, D::Error> {
        lenient_count(d).map(Count)
    }
}

struct Details(Option<TokenDetails>);

impl<'de> Deserialize<'de> for Details {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Details, D::Error> {
        lenient_details(d).map(Details)
    }
}

struct UsageVisitor;

impl<'de> Visitor<'de> for UsageVisitor {
    type Value = LenientUsage;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    /// The object's counts; a key given twice counts its last value, as in a `Value`'s map.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LenientUsage, A::Error> {
        let mut u = Usage::default();
        while let Some(key) = map.next_key::<UsageKey>()? {
            match key {
                UsageKey::Prompt => u.prompt_tokens = map.next_value::<Count>()?.0,
                UsageKey::Completion => u.completion_tokens = map.next_value::<Count>()?.0,
                UsageKey::PromptDetails => {
                    u.prompt_tokens_details = map.next_value::<Details>()?.0;
                }
                UsageKey::CompletionDetails => {
                    u.completion_tokens_details = map.next_value::<Details>()?.0;
                }
                UsageKey::Other => {
                    map.next_value::<serde_json::Value>()?;
                }
            }
        }
        Ok(LenientUsage(Some(u)))
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<LenientUsage, E> {
        Ok(LenientUsage(None))
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<LenientUsage, E> {
        Ok(LenientUsage(None))
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<LenientUsage, E> {
        Ok(LenientUsage(None))
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<LenientUsage, E> {
        Ok(LenientUsage(None))
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<LenientUsage, E> {
        Ok(LenientUsage(None))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<LenientUsage, E> {
        Ok(LenientUsage(None))
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<LenientUsage, E> {
        Ok(LenientUsage(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<LenientUsage, A::Error> {
        serde_json::Value::deserialize(SeqAccessDeserializer::new(seq))?;
        Ok(LenientUsage(None))
    }
}

impl<'de> Deserialize<'de> for LenientUsage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<LenientUsage, D::Error> {
        d.deserialize_any(UsageVisitor)
    }
}
