//! Field types that accept whatever JSON value a trtexec export puts in a slot.
//!
//! trtexec's writers change shape between TensorRT versions (a field may be a string in one release
//! and missing or a number in another). A typed record built from these types never fails on a
//! type mismatch: the value is skipped and the field remembers that it was present but unusable,
//! so validation can name the problem instead of the parser giving up on the whole file.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// What a loose field held.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Slot<T> {
    /// The key was absent (or the value was `null`).
    #[default]
    Missing,
    /// The value had the expected type.
    Value(T),
    /// The key was present with a value of another type.
    Wrong,
}

impl<T> Slot<T> {
    pub fn value(&self) -> Option<&T> {
        match self {
            Slot::Value(v) => Some(v),
            _ => None,
        }
    }
    pub fn into_value(self) -> Option<T> {
        match self {
            Slot::Value(v) => Some(v),
            _ => None,
        }
    }
    pub fn is_wrong(&self) -> bool {
        matches!(self, Slot::Wrong)
    }
    pub fn is_missing(&self) -> bool {
        matches!(self, Slot::Missing)
    }
}

fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Implements the visitor methods that turn an unexpected value into `Slot::Wrong`.
macro_rules! reject_others {
    (except $($kind:ident),*) => {
        reject_others!(@one bool, $($kind),*);
        reject_others!(@one i64, $($kind),*);
        reject_others!(@one u64, $($kind),*);
        reject_others!(@one f64, $($kind),*);
        reject_others!(@one str, $($kind),*);
        reject_others!(@one seq, $($kind),*);
        reject_others!(@one map, $($kind),*);
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Slot::Missing)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Slot::Missing)
        }
    };
    (@one bool, bool $(, $rest:ident)*) => {};
    (@one i64, num $(, $rest:ident)*) => {};
    (@one u64, num $(, $rest:ident)*) => {};
    (@one f64, num $(, $rest:ident)*) => {};
    (@one str, str $(, $rest:ident)*) => {};
    (@one seq, seq $(, $rest:ident)*) => {};
    (@one map, map $(, $rest:ident)*) => {};
    (@one $what:ident, $other:ident $(, $rest:ident)*) => { reject_others!(@one $what $(, $rest)*); };
    (@one bool) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> { Ok(Slot::Wrong) }
    };
    (@one i64) => {
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> { Ok(Slot::Wrong) }
    };
    (@one u64) => {
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> { Ok(Slot::Wrong) }
    };
    (@one f64) => {
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> { Ok(Slot::Wrong) }
    };
    (@one str) => {
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> { Ok(Slot::Wrong) }
    };
    (@one seq) => {
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            drain_seq(seq)?;
            Ok(Slot::Wrong)
        }
    };
    (@one map) => {
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            drain_map(map)?;
            Ok(Slot::Wrong)
        }
    };
}

/// A string field.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LStr(pub Slot<String>);

impl<'de> Deserialize<'de> for LStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Slot<String>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Slot::Value(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Slot::Value(v))
            }
            reject_others!(except str);
        }
        d.deserialize_any(V).map(LStr)
    }
}

/// A string field borrowed from the document when it has no escapes (types and formats repeat
/// thousands of times; they are interned by the reader).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LCow<'a>(pub Slot<std::borrow::Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for LCow<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Slot<std::borrow::Cow<'a, str>>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Slot::Value(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Slot::Value(std::borrow::Cow::Owned(v.to_owned())))
            }
            reject_others!(except str);
        }
        d.deserialize_any(V(std::marker::PhantomData)).map(LCow)
    }
}

/// A finite number field (integers are widened to `f64`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LNum(pub Slot<f64>);

impl<'de> Deserialize<'de> for LNum {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Slot<f64>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Slot::Value(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Slot::Value(v as f64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(if v.is_finite() {
                    Slot::Value(v)
                } else {
                    Slot::Wrong
                })
            }
            reject_others!(except num);
        }
        d.deserialize_any(V).map(LNum)
    }
}

/// A field that is either an integer or a string (StreamId, _subgraph).
#[derive(Debug, Clone, PartialEq)]
pub enum IntOrStr {
    /// Written as a JSON integer.
    Int(i64),
    /// Written as a JSON string.
    Str(String),
}

impl fmt::Display for IntOrStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IntOrStr::Int(v) => write!(f, "{v}"),
            IntOrStr::Str(v) => f.write_str(v),
        }
    }
}

impl serde::Serialize for IntOrStr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            IntOrStr::Int(v) => s.serialize_i64(*v),
            IntOrStr::Str(v) => s.serialize_str(v),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct LIntOrStr(pub Slot<IntOrStr>);

impl<'de> Deserialize<'de> for LIntOrStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Slot<IntOrStr>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Slot::Value(IntOrStr::Int(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(i64::try_from(v)
                    .map(|v| Slot::Value(IntOrStr::Int(v)))
                    .unwrap_or(Slot::Wrong))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Slot::Value(IntOrStr::Str(v.to_owned())))
            }
            reject_others!(except num, str);
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Slot::Wrong)
            }
        }
        d.deserialize_any(V).map(LIntOrStr)
    }
}

/// A list of integers (tensor `Dimensions`); any non-integer element makes the whole slot wrong.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LDims(pub Slot<Vec<i64>>);

impl<'de> Deserialize<'de> for LDims {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Slot<Vec<i64>>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut dims = Vec::with_capacity(seq.size_hint().unwrap_or(4).min(16));
                let mut ok = true;
                while let Some(LNum(n)) = seq.next_element::<LNum>()? {
                    match n {
                        Slot::Value(v) if v.fract() == 0.0 && v.abs() < 9.0e15 => {
                            dims.push(v as i64)
                        }
                        _ => ok = false,
                    }
                }
                Ok(if ok { Slot::Value(dims) } else { Slot::Wrong })
            }
            reject_others!(except seq);
        }
        d.deserialize_any(V).map(LDims)
    }
}

/// A list whose elements are each loose (`T` decides what it accepts).
#[derive(Debug, Clone, PartialEq)]
pub struct LList<T>(pub Slot<Vec<T>>);

impl<T> Default for LList<T> {
    fn default() -> Self {
        LList(Slot::Missing)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for LList<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Slot<Vec<T>>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(2).min(64));
                while let Some(item) = seq.next_element::<T>()? {
                    items.push(item);
                }
                Ok(Slot::Value(items))
            }
            reject_others!(except seq);
        }
        d.deserialize_any(V(std::marker::PhantomData)).map(LList)
    }
}

/// An object decoded as `T` (whose fields must themselves be loose), or a slot saying it was not an
/// object.
#[derive(Debug, Clone, PartialEq)]
pub struct LObj<T>(pub Slot<T>);

impl<T> Default for LObj<T> {
    fn default() -> Self {
        LObj(Slot::Missing)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for LObj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Slot<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Slot::Value)
            }
            reject_others!(except map);
        }
        d.deserialize_any(V(std::marker::PhantomData)).map(LObj)
    }
}

/// Records only whether a key was present, and whether its value was a string (for `Metadata`,
/// which the published analysis schema allows to be a string, object, array or null).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LPresent(pub Slot<()>);

impl<'de> Deserialize<'de> for LPresent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d).map(|_| LPresent(Slot::Value(())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, serde::Deserialize)]
    #[serde(default)]
    struct Rec {
        s: LStr,
        n: LNum,
        d: LDims,
        l: LList<LStr>,
        id: LIntOrStr,
    }

    fn rec(json: &str) -> Rec {
        serde_json::from_str(json).expect("test JSON is valid")
    }

    #[test]
    fn accepts_the_expected_types() {
        let r = rec(r#"{"s":"x","n":2,"d":[1,-1,3],"l":["a",1],"id":"7"}"#);
        assert_eq!(r.s.0, Slot::Value("x".to_owned()));
        assert_eq!(r.n.0, Slot::Value(2.0));
        assert_eq!(r.d.0, Slot::Value(vec![1, -1, 3]));
        let l = r.l.0.into_value().expect("list");
        assert_eq!(l[0].0, Slot::Value("a".to_owned()));
        assert!(l[1].0.is_wrong());
        assert_eq!(r.id.0, Slot::Value(IntOrStr::Str("7".to_owned())));
    }

    #[test]
    fn marks_mismatches_without_failing() {
        let r = rec(r#"{"s":{"deep":[1,2,{"x":null}]},"n":"3","d":[1.5],"l":{"a":1},"id":[1]}"#);
        assert!(r.s.0.is_wrong());
        assert!(r.n.0.is_wrong());
        assert!(r.d.0.is_wrong());
        assert!(r.l.0.is_wrong());
        assert!(r.id.0.is_wrong());
    }

    #[test]
    fn null_and_absent_are_missing() {
        let r = rec(r#"{"s":null}"#);
        assert!(r.s.0.is_missing());
        assert!(r.n.0.is_missing());
    }
}
