//! The `wire_enum!` macro: string enums carrying OLM's exact wire values.
//!
//! Every enum made with it has one variant per known OLM string plus `Other(String)`, so a value
//! written by a newer OLM (or by hand) is read without error and written back unchanged. Code that
//! builds values should use the named variants; `from_wire` maps known strings to them, so
//! `Other` only ever holds strings this crate does not know.
//!
//! The JSON schema of such an enum is a plain `type: string` without an `enum` list: the apiserver
//! must accept what our deserializer accepts.

/// Declares a wire-string enum. See the module documentation.
#[macro_export]
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A string this crate does not know, kept verbatim so that it round-trips.
            Other(::std::string::String),
        }

        impl $name {
            /// Every known variant, in declaration order.
            pub const KNOWN: &'static [$name] = &[$($name::$variant),+];

            /// The exact string OLM puts on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $wire,)+
                    $name::Other(s) => s.as_str(),
                }
            }

            /// Reads a wire string; unknown strings become `Other`.
            pub fn from_wire(s: &str) -> Self {
                match s {
                    $($wire => $name::$variant,)+
                    other => $name::Other(other.to_owned()),
                }
            }

            /// True unless this is an `Other` value.
            pub fn is_known(&self) -> bool {
                !matches!(self, $name::Other(_))
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::convert::From<&str> for $name {
            fn from(s: &str) -> Self {
                Self::from_wire(s)
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> ::std::result::Result<Self, D::Error> {
                let s = <::std::borrow::Cow<'de, str> as ::serde::Deserialize>::deserialize(deserializer)?;
                Ok(Self::from_wire(&s))
            }
        }

        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                ::schemars::json_schema!({ "type": "string" })
            }
        }
    };
}
