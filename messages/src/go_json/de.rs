//! A serde [`Deserializer`] over a [`serde_json::Value`] with the semantics of Go's `encoding/json` decoding into
//! a typed struct, which is how OLM reads bundle manifests:
//!
//! - `null` into a string, number, bool, list, map or struct is that type's zero value (`""`, `0`, `false`,
//!   empty); into an `Option` it is `None`; into an untyped `Value` it stays `null` (Go's `interface{}`).
//! - every other type mismatch is refused, naming the field path (`spec.install.spec.deployments[0].name`).
//!
//! Unknown fields are ignored as serde does (Go ignores them too); callers that send objects on keep the original
//! JSON, so nothing unknown is lost ([`super::normalize`]).

use serde::de::{
    self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};
use serde_json::{Map, Value};
use std::fmt;

/// A refusal: the field path and what was wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", if path.is_empty() { "(the object)" } else { path.as_str() })]
pub struct DecodeError {
    /// `metadata.annotations.createdAt`, `spec.install.spec.deployments[0]`; empty for the object itself.
    pub path: String,
    pub message: String,
}

impl de::Error for DecodeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DecodeError {
            path: String::new(),
            message: msg.to_string(),
        }
    }
}

impl DecodeError {
    /// The error with `path` if it has none yet (the innermost access names the field).
    fn at(mut self, path: &str) -> Self {
        if self.path.is_empty() {
            self.path = path.to_string();
        }
        self
    }
}

/// The deserializer for one value at `path`.
pub struct GoDe<'a> {
    pub value: &'a Value,
    pub path: String,
}

impl<'a> GoDe<'a> {
    pub fn new(value: &'a Value) -> Self {
        GoDe {
            value,
            path: String::new(),
        }
    }

    fn child(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }
}

macro_rules! zero_on_null {
    ($($method:ident => $zero:expr),* $(,)?) => {
        $(
            fn $method<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DecodeError> {
                if self.value.is_null() {
                    #[allow(clippy::redundant_closure_call)]
                    return ($zero)(visitor);
                }
                self.deserialize_any(visitor)
            }
        )*
    };
}

impl<'a> Deserializer<'a> for GoDe<'a> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        let path = self.path.clone();
        let result = match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    visitor.visit_u64(u)
                } else if let Some(i) = n.as_i64() {
                    visitor.visit_i64(i)
                } else {
                    visitor.visit_f64(n.as_f64().unwrap_or_default())
                }
            }
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => visitor.visit_seq(Seq {
                items: items.iter().enumerate(),
                path: &self.path,
            }),
            Value::Object(map) => visitor.visit_map(Fields {
                entries: map.iter(),
                missing: Vec::new().into_iter(),
                value: None,
                parent: &self.path,
                current: String::new(),
            }),
        };
        result.map_err(|e| e.at(&path))
    }

    zero_on_null! {
        deserialize_bool => |v: V| v.visit_bool(false),
        deserialize_i8 => |v: V| v.visit_i64(0),
        deserialize_i16 => |v: V| v.visit_i64(0),
        deserialize_i32 => |v: V| v.visit_i64(0),
        deserialize_i64 => |v: V| v.visit_i64(0),
        deserialize_u8 => |v: V| v.visit_u64(0),
        deserialize_u16 => |v: V| v.visit_u64(0),
        deserialize_u32 => |v: V| v.visit_u64(0),
        deserialize_u64 => |v: V| v.visit_u64(0),
        deserialize_f32 => |v: V| v.visit_f64(0.0),
        deserialize_f64 => |v: V| v.visit_f64(0.0),
        deserialize_char => |v: V| v.visit_borrowed_str(""),
        deserialize_str => |v: V| v.visit_borrowed_str(""),
        deserialize_string => |v: V| v.visit_borrowed_str(""),
        deserialize_bytes => |v: V| v.visit_borrowed_bytes(&[]),
        deserialize_byte_buf => |v: V| v.visit_borrowed_bytes(&[]),
        deserialize_seq => |v: V| v.visit_seq(empty_seq()),
        deserialize_map => |v: V| v.visit_map(empty_map()),
    }

    fn deserialize_option<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        if self.value.is_null() {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_unit<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        self.deserialize_any(visitor)
    }

    fn deserialize_unit_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_any(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_tuple<V: Visitor<'a>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_seq(visitor)
    }

    /// Go leaves a field the object does not write at its zero value; serde would call it missing. So every
    /// field of the struct that the object lacks is read as `null` (the zero value; `None` when optional).
    fn deserialize_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        let path = self.path.clone();
        let entries = match self.value {
            Value::Object(map) => map,
            Value::Null => &*EMPTY,
            _ => return self.deserialize_any(visitor),
        };
        let missing: Vec<&'static str> = fields
            .iter()
            .copied()
            .filter(|f| !entries.contains_key(*f))
            .collect();
        visitor
            .visit_map(Fields {
                entries: entries.iter(),
                missing: missing.into_iter(),
                value: None,
                parent: &self.path,
                current: String::new(),
            })
            .map_err(|e| e.at(&path))
    }

    fn deserialize_enum<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        let path = self.path.clone();
        let result = match self.value {
            // Go enums are strings: null is "", which names no variant.
            Value::Null => visitor.visit_enum("".into_deserializer()),
            Value::String(s) => visitor.visit_enum(s.as_str().into_deserializer()),
            Value::Object(map) if map.len() == 1 => match map.iter().next() {
                Some((k, v)) => visitor.visit_enum(Variant {
                    name: k,
                    value: GoDe {
                        value: v,
                        path: self.child(k),
                    },
                }),
                None => Err(de::Error::custom("an empty object names no variant")),
            },
            other => Err(de::Error::invalid_type(unexpected(other), &"a string")),
        };
        result.map_err(|e| e.at(&path))
    }

    fn deserialize_identifier<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        self.deserialize_any(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_unit()
    }
}

fn unexpected(v: &Value) -> de::Unexpected<'_> {
    match v {
        Value::Null => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => de::Unexpected::Unsigned(u),
            (_, Some(i)) => de::Unexpected::Signed(i),
            _ => de::Unexpected::Float(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => de::Unexpected::Str(s),
        Value::Array(_) => de::Unexpected::Seq,
        Value::Object(_) => de::Unexpected::Map,
    }
}

fn empty_seq<'a>() -> Seq<'a, 'static> {
    Seq {
        items: EMPTY_LIST.iter().enumerate(),
        path: "",
    }
}

static EMPTY_LIST: [Value; 0] = [];

static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

fn empty_map<'a>() -> Fields<'a, 'static> {
    Fields {
        entries: EMPTY.iter(),
        missing: Vec::new().into_iter(),
        value: None,
        parent: "",
        current: String::new(),
    }
}

struct Seq<'a, 'p> {
    items: std::iter::Enumerate<std::slice::Iter<'a, Value>>,
    path: &'p str,
}

impl<'a> SeqAccess<'a> for Seq<'a, '_> {
    type Error = DecodeError;

    fn next_element_seed<T: DeserializeSeed<'a>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DecodeError> {
        let Some((i, value)) = self.items.next() else {
            return Ok(None);
        };
        let path = format!("{}[{i}]", self.path);
        seed.deserialize(GoDe {
            value,
            path: path.clone(),
        })
        .map(Some)
        .map_err(|e| e.at(&path))
    }
}

struct Fields<'a, 'p> {
    entries: serde_json::map::Iter<'a>,
    /// Fields of the struct the object lacks, read as `null` after its own entries.
    missing: std::vec::IntoIter<&'static str>,
    value: Option<&'a Value>,
    parent: &'p str,
    current: String,
}

impl<'a> MapAccess<'a> for Fields<'a, '_> {
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'a>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DecodeError> {
        let (key, value): (&'a str, &'a Value) = match self.entries.next() {
            Some((k, v)) => (k.as_str(), v),
            None => match self.missing.next() {
                Some(field) => (field, &Value::Null),
                None => return Ok(None),
            },
        };
        self.value = Some(value);
        self.current = if self.parent.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.parent)
        };
        let path = self.current.clone();
        seed.deserialize(de::value::BorrowedStrDeserializer::new(key))
            .map(Some)
            .map_err(|e: de::value::Error| DecodeError {
                path,
                message: e.to_string(),
            })
    }

    fn next_value_seed<V: DeserializeSeed<'a>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, DecodeError> {
        let value = self.value.take().unwrap_or(&Value::Null);
        let path = self.current.clone();
        seed.deserialize(GoDe {
            value,
            path: path.clone(),
        })
        .map_err(|e| e.at(&path))
    }
}

struct Variant<'a> {
    name: &'a str,
    value: GoDe<'a>,
}

impl<'a> de::EnumAccess<'a> for Variant<'a> {
    type Error = DecodeError;
    type Variant = GoDe<'a>;

    fn variant_seed<V: DeserializeSeed<'a>>(
        self,
        seed: V,
    ) -> Result<(V::Value, GoDe<'a>), DecodeError> {
        let name = seed
            .deserialize(self.name.into_deserializer())
            .map_err(|e: de::value::Error| de::Error::custom(e))?;
        Ok((name, self.value))
    }
}

impl<'a> de::VariantAccess<'a> for GoDe<'a> {
    type Error = DecodeError;

    fn unit_variant(self) -> Result<(), DecodeError> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'a>>(
        self,
        seed: T,
    ) -> Result<T::Value, DecodeError> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'a>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_seq(visitor)
    }

    fn struct_variant<V: Visitor<'a>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_map(visitor)
    }
}
