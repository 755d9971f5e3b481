//! How hard the model thinks before it answers: hx's four effort names, and how each
//! provider's API is told them.
//!
//! DeepSeek (its thinking-mode guide) takes `"thinking": {"type": "enabled" | "disabled"}` and,
//! with thinking on, `"reasoning_effort": "low" | "high" | "max"`; V4 models think at `high`
//! when told nothing. OpenAI's chat completions take `reasoning_effort` alone, in its own words
//! (`none`, `low`, `high`, `xhigh`, among others); OpenRouter takes a `reasoning` object with
//! an `effort` in the same words. A request without a setting carries none of these keys, so
//! the model's own default holds and a server that rejects unknown keys never sees them.

use serde::ser::SerializeMap;
use serde::Deserialize;

/// How hard the model thinks: `off` (not at all), `low`, `high` (DeepSeek V4's default), `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    /// No thinking: the answer comes at once
    Off,
    /// Brief thinking
    Low,
    /// Thorough thinking (DeepSeek V4's default)
    High,
    /// The most thinking the model does
    Max,
}

impl Effort {
    /// Every effort, in order.
    pub const ALL: [Effort; 4] = [Effort::Off, Effort::Low, Effort::High, Effort::Max];

    /// The name hx gives it: in flags, config files, `/effort` and session files.
    pub fn name(self) -> &'static str {
        match self {
            Effort::Off => "off",
            Effort::Low => "low",
            Effort::High => "high",
            Effort::Max => "max",
        }
    }

    /// The effort named `name` (as [`Effort::name`] gives it); the error names the allowed
    /// values.
    pub fn parse(name: &str) -> Result<Effort, String> {
        Effort::ALL
            .into_iter()
            .find(|e| e.name() == name)
            .ok_or_else(|| format!("unknown effort '{name}': use off, low, high or max"))
    }
}

/// How a provider's API is told the effort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// `thinking` and `reasoning_effort` (DeepSeek).
    DeepSeek,
    /// `reasoning_effort` in OpenAI's words (OpenAI, and servers that copy its API).
    #[default]
    OpenAi,
    /// A `reasoning` object with an `effort` in OpenAI's words (OpenRouter).
    OpenRouter,
}

/// What a request says of thinking: an effort, in a provider's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thinking {
    pub effort: Effort,
    pub dialect: Dialect,
}

impl Thinking {
    /// Adds the request's keys to `m`, the map of the request body.
    pub(crate) fn serialize_into<M: SerializeMap>(&self, m: &mut M) -> Result<(), M::Error> {
        match self.dialect {
            Dialect::DeepSeek => match self.effort {
                Effort::Off => m.serialize_entry("thinking", &Toggle("disabled")),
                effort => {
                    m.serialize_entry("thinking", &Toggle("enabled"))?;
                    m.serialize_entry("reasoning_effort", effort.name())
                }
            },
            Dialect::OpenAi => m.serialize_entry("reasoning_effort", openai_word(self.effort)),
            Dialect::OpenRouter => {
                m.serialize_entry("reasoning", &EffortObject(openai_word(self.effort)))
            }
        }
    }
}

/// OpenAI's word for an effort: `none` turns thinking off (gpt-5.1 and later), and its top
/// effort is `xhigh` (OpenRouter's too, which maps it to DeepSeek's `max`).
fn openai_word(effort: Effort) -> &'static str {
    match effort {
        Effort::Off => "none",
        Effort::Low => "low",
        Effort::High => "high",
        Effort::Max => "xhigh",
    }
}

/// `{"type": WORD}`.
struct Toggle(&'static str);

impl serde::Serialize for Toggle {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut m = ser.serialize_map(Some(1))?;
        m.serialize_entry("type", self.0)?;
        m.end()
    }
}

/// `{"effort": WORD}`.
struct EffortObject(&'static str);

impl serde::Serialize for EffortObject {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut m = ser.serialize_map(Some(1))?;
        m.serialize_entry("effort", self.0)?;
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_others_are_refused_naming_the_allowed_ones() {
        for e in Effort::ALL {
            assert_eq!(Effort::parse(e.name()), Ok(e));
        }
        let e = Effort::parse("huge").expect_err("not an effort");
        assert_eq!(e, "unknown effort 'huge': use off, low, high or max");
        assert!(Effort::parse("High").is_err());
    }
}
