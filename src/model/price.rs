//! What a request costs: a model's prices (cache-hit input, cache-miss input, output, per
//! million tokens; other prices in peak windows of the UTC clock), the cost of one request's
//! usage at the time it was made, and the sums of costs.
//!
//! Amounts are kept in billionths of their currency (`u64`), so sums are exact and a figure
//! read back from a session file is the one written; they are shown to the cent's hundredth.

use std::fmt;

/// The date of DeepSeek's pricing page that [`builtin`] copies.
pub const DEEPSEEK_PRICES_DATE: &str = "2026-11-15";

/// A currency code: up to 8 ASCII letters (`USD`, `CNY`, `EUR`), kept inline so a cost is
/// `Copy`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Currency([u8; 8]);

impl Currency {
    pub const USD: Currency = Currency(*b"USD\0\0\0\0\0");

    /// The code, upper-cased; `None` unless 1 to 8 ASCII letters.
    pub fn parse(s: &str) -> Option<Currency> {
        let s = s.trim();
        if s.is_empty() || s.len() > 8 || !s.bytes().all(|b| b.is_ascii_alphabetic()) {
            return None;
        }
        let mut code = [0u8; 8];
        for (i, b) in s.bytes().enumerate() {
            code[i] = b.to_ascii_uppercase();
        }
        Some(Currency(code))
    }

    pub fn code(&self) -> &str {
        let n = self.0.iter().position(|&b| b == 0).unwrap_or(8);
        std::str::from_utf8(&self.0[..n]).unwrap_or("")
    }

    /// `amount` as shown: `$0.0123` for dollars, `0.0123 EUR` for any other currency; under
    /// a cent, to the millionth (`$0.000429`), so a small run does not read as free.
    pub fn show(&self, nanos: u64) -> String {
        let amount = nanos as f64 / 1e9;
        let digits = if nanos < 10_000_000 { 6 } else { 4 };
        if *self == Currency::USD {
            format!("${amount:.digits$}")
        } else {
            format!("{amount:.digits$} {}", self.code())
        }
    }
}

impl fmt::Debug for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// Prices per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    pub input_cache_hit: f64,
    pub input_cache_miss: f64,
    pub output: f64,
}

/// A window of the UTC clock, Monday to Friday, in minutes of the day (`from` included, `to`
/// not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub from: u16,
    pub to: u16,
}

impl Window {
    /// `HH:MM-HH:MM` (UTC); `24:00` may end one.
    pub fn parse(s: &str) -> Option<Window> {
        let (a, b) = s.trim().split_once('-')?;
        let minute = |t: &str| -> Option<u16> {
            let (h, m) = t.trim().split_once(':')?;
            let (h, m): (u16, u16) = (h.parse().ok()?, m.parse().ok()?);
            (m < 60 && (h < 24 || (h == 24 && m == 0))).then_some(h * 60 + m)
        };
        let (from, to) = (minute(a)?, minute(b)?);
        (from < to).then_some(Window { from, to })
    }

    fn holds(&self, minute: u16) -> bool {
        self.from <= minute && minute < self.to
    }
}

/// A model's prices: `base`, and `peak` rates inside its windows.
#[derive(Debug, Clone, PartialEq)]
pub struct Price {
    pub base: Rates,
    pub peak: Option<(Vec<Window>, Rates)>,
    pub currency: Currency,
}

/// The cost of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cost {
    pub nanos: u64,
    pub currency: Currency,
    /// It was made in a peak window.
    pub peak: bool,
}

impl Cost {
    pub fn show(&self) -> String {
        self.currency.show(self.nanos)
    }
}

/// Whether `unix` seconds fall on a weekday (UTC), and the minute of that day.
fn weekday_minute(unix: u64) -> (bool, u16) {
    let days = unix / 86_400;
    // 1970-01-01 was a Thursday: day 0 is weekday 3 counting Monday as 0.
    let weekday = (days + 3) % 7;
    let minute = ((unix % 86_400) / 60) as u16;
    (weekday < 5, minute)
}

impl Price {
    /// The rates of a request made at `unix` seconds (UTC), and whether they are peak ones.
    pub fn rates_at(&self, unix: u64) -> (&Rates, bool) {
        if let Some((windows, rates)) = &self.peak {
            let (weekday, minute) = weekday_minute(unix);
            if weekday && windows.iter().any(|w| w.holds(minute)) {
                return (rates, true);
            }
        }
        (&self.base, false)
    }

    /// What a cache miss of `tokens` costs beyond a hit of them, at `unix` seconds: the price
    /// of breaking the prompt cache's prefix before them.
    pub fn miss_extra(&self, tokens: u64, unix: u64) -> Cost {
        let (r, peak) = self.rates_at(unix);
        let nanos = tokens as f64 * (r.input_cache_miss - r.input_cache_hit).max(0.0) * 1000.0;
        Cost {
            nanos: if nanos.is_finite() && nanos > 0.0 {
                nanos.round() as u64
            } else {
                0
            },
            currency: self.currency,
            peak,
        }
    }

    /// What `usage` costs at `unix` seconds: hit tokens at the hit rate, the rest of the
    /// prompt at the miss rate, the completion (its reasoning included) at the output rate.
    pub fn cost(&self, usage: &super::Usage, unix: u64) -> Cost {
        let (r, peak) = self.rates_at(unix);
        let hit = usage.prompt_cache_hit_tokens.min(usage.prompt_tokens);
        let miss = usage.prompt_tokens - hit;
        // Per million tokens in billionths: a rate times a thousand per token.
        let nanos = (hit as f64 * r.input_cache_hit
            + miss as f64 * r.input_cache_miss
            + usage.completion_tokens as f64 * r.output)
            * 1000.0;
        Cost {
            nanos: if nanos.is_finite() && nanos > 0.0 {
                // `as` saturates at u64::MAX.
                nanos.round() as u64
            } else {
                0
            },
            currency: self.currency,
            peak,
        }
    }
}

/// DeepSeek's prices as its Models & Pricing page gave them on [`DEEPSEEK_PRICES_DATE`]
/// (USD per million tokens): off-peak, and twice that from 01:00 to 04:00 and 06:00 to 10:00
/// UTC on weekdays (09:00-12:00 and 14:00-18:00 Beijing time). DeepSeek bills China's public
/// holidays off-peak; this table does not know them, so a weekday holiday is priced at peak,
/// never below the bill.
///
/// `deepseek-flash` is V4.1 Flash; the legacy names `deepseek-v4-flash` and
/// `deepseek-v4-flash-vision-exp` are served and billed as it. (`deepseek-chat` and
/// `deepseek-reasoner`, retired, are sent as `deepseek-flash` by hx's config.)
pub fn builtin(provider: &str, model: &str) -> Option<Price> {
    if provider != "deepseek" {
        return None;
    }
    let (hit, miss, output) = match model {
        "deepseek-flash" | "deepseek-v4-flash" | "deepseek-v4-flash-vision-exp" => {
            (0.003, 0.15, 0.6)
        }
        "deepseek-v4-pro" => (0.022, 0.66, 1.98),
        _ => return None,
    };
    let base = Rates {
        input_cache_hit: hit,
        input_cache_miss: miss,
        output,
    };
    let peak = Rates {
        input_cache_hit: hit * 2.0,
        input_cache_miss: miss * 2.0,
        output: output * 2.0,
    };
    Some(Price {
        base,
        peak: Some((DEEPSEEK_PEAK.to_vec(), peak)),
        currency: Currency::USD,
    })
}

/// DeepSeek's peak windows, UTC, Monday to Friday.
pub const DEEPSEEK_PEAK: [Window; 2] = [
    Window {
        from: 60,
        to: 4 * 60,
    },
    Window {
        from: 6 * 60,
        to: 10 * 60,
    },
];

/// Costs added up: their amount in one currency, how many requests had a price and how many
/// had none (a model without one: its cost is unknown, never guessed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spend {
    pub nanos: u64,
    pub currency: Option<Currency>,
    pub priced: u32,
    pub unpriced: u32,
    /// Costs in different currencies were added: the sum means nothing.
    pub mixed: bool,
}

impl Spend {
    /// One request's cost (`None`: it had no price).
    pub fn add_cost(&mut self, cost: Option<Cost>) {
        match cost {
            Some(c) => {
                self.nanos = self.nanos.saturating_add(c.nanos);
                self.priced = self.priced.saturating_add(1);
                match self.currency {
                    Some(cur) if cur != c.currency => self.mixed = true,
                    _ => self.currency = Some(c.currency),
                }
            }
            None => self.unpriced = self.unpriced.saturating_add(1),
        }
    }

    pub fn add(&mut self, other: &Spend) {
        self.nanos = self.nanos.saturating_add(other.nanos);
        self.priced = self.priced.saturating_add(other.priced);
        self.unpriced = self.unpriced.saturating_add(other.unpriced);
        self.mixed |= other.mixed;
        match (self.currency, other.currency) {
            (Some(a), Some(b)) if a != b => self.mixed = true,
            (None, b) => self.currency = b,
            _ => {}
        }
    }

    pub fn is_empty(&self) -> bool {
        self.priced == 0 && self.unpriced == 0
    }

    /// The amount, when every request counted had a price in one currency.
    pub fn known(&self) -> Option<(u64, Currency)> {
        match self.currency {
            Some(c) if self.unpriced == 0 && !self.mixed => Some((self.nanos, c)),
            _ => None,
        }
    }

    /// `$0.0123`; `unknown` when no request had a price; `$0.0123 + unknown` when some had
    /// none; `unknown (currencies mixed)`.
    pub fn show(&self) -> String {
        if self.mixed {
            return "unknown (currencies mixed)".into();
        }
        match self.currency {
            None => "unknown".into(),
            Some(c) if self.unpriced > 0 => format!("{} + unknown", c.show(self.nanos)),
            Some(c) => c.show(self.nanos),
        }
    }

    /// The amount as a number of its currency (for `--json`).
    pub fn amount(&self) -> Option<f64> {
        self.known().map(|(n, _)| n as f64 / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Usage;

    // 2026-12-02 is a Wednesday.
    const WED_0230_UTC: u64 = 1_796_178_600;
    const WED_1200_UTC: u64 = 1_796_212_800;
    const SAT_0230_UTC: u64 = 1_796_437_800;

    fn usage(prompt: u64, hit: u64, completion: u64) -> Usage {
        Usage {
            prompt_tokens: prompt,
            prompt_cache_hit_tokens: hit,
            completion_tokens: completion,
            reasoning_tokens: 0,
        }
    }

    #[test]
    fn the_clock_constants_are_the_days_they_say() {
        assert_eq!(
            humantime::format_rfc3339_seconds(
                std::time::UNIX_EPOCH + std::time::Duration::from_secs(WED_0230_UTC)
            )
            .to_string(),
            "2026-12-02T02:30:00Z"
        );
        assert_eq!(weekday_minute(WED_0230_UTC), (true, 150));
        assert_eq!(weekday_minute(WED_1200_UTC), (true, 720));
        assert_eq!(weekday_minute(SAT_0230_UTC), (false, 150));
    }

    #[test]
    fn a_flash_request_costs_its_tokens_at_the_rates_of_its_window() {
        let p = builtin("deepseek", "deepseek-flash").expect("priced");
        // 1,000,000 prompt tokens of which 900,000 hit, 10,000 out.
        let u = usage(1_000_000, 900_000, 10_000);
        // Off-peak: 0.9 * 0.003 + 0.1 * 0.15 + 0.01 * 0.6 = 0.0027 + 0.015 + 0.006.
        let off = p.cost(&u, WED_1200_UTC);
        assert_eq!((off.nanos, off.peak), (23_700_000, false));
        assert_eq!(off.show(), "$0.0237");
        assert_eq!(Currency::USD.show(429_000), "$0.000429");
        // Peak (Wednesday 02:30 UTC): twice that.
        let peak = p.cost(&u, WED_0230_UTC);
        assert_eq!((peak.nanos, peak.peak), (47_400_000, true));
        // A million tokens missed instead of hit: $0.147 more off-peak.
        assert_eq!(p.miss_extra(1_000_000, WED_1200_UTC).nanos, 147_000_000);
        // The weekend is off-peak at every hour.
        assert_eq!(p.cost(&u, SAT_0230_UTC).nanos, 23_700_000);
        // Pro: 0.9 * 0.022 + 0.1 * 0.66 + 0.01 * 1.98, off-peak.
        let pro = builtin("deepseek", "deepseek-v4-pro").expect("priced");
        assert_eq!(pro.cost(&u, WED_1200_UTC).nanos, 105_600_000);
        // A hit is 1/50 of a miss on Flash, 1/30 on Pro, as DeepSeek says.
        assert!((p.base.input_cache_miss / p.base.input_cache_hit - 50.0).abs() < 1e-9);
        assert!((pro.base.input_cache_miss / pro.base.input_cache_hit - 30.0).abs() < 1e-9);
    }

    #[test]
    fn only_deepseek_s_own_names_on_its_own_provider_are_priced() {
        for m in ["deepseek-flash", "deepseek-v4-flash", "deepseek-v4-pro"] {
            assert!(builtin("deepseek", m).is_some(), "{m}");
        }
        assert!(builtin("deepseek", "deepseek-chat").is_none());
        assert!(builtin("ollama", "deepseek-flash").is_none());
        assert!(builtin("openai", "gpt-5").is_none());
    }

    #[test]
    fn hits_beyond_the_prompt_and_absurd_counts_do_not_wrap() {
        let p = builtin("deepseek", "deepseek-flash").expect("priced");
        assert_eq!(p.cost(&usage(10, 50, 0), WED_1200_UTC).nanos, 30);
        assert_eq!(
            p.cost(&usage(u64::MAX, 0, u64::MAX), WED_1200_UTC).nanos,
            u64::MAX
        );
    }

    #[test]
    fn sums_say_unknown_rather_than_guess() {
        let mut s = Spend::default();
        assert_eq!(s.show(), "unknown");
        s.add_cost(None);
        assert_eq!((s.show(), s.amount()), ("unknown".to_string(), None));
        s.add_cost(Some(Cost {
            nanos: 12_300_000,
            currency: Currency::USD,
            peak: false,
        }));
        assert_eq!(s.show(), "$0.0123 + unknown");
        let mut t = Spend::default();
        t.add_cost(Some(Cost {
            nanos: 1_000_000_000,
            currency: Currency::parse("eur").expect("code"),
            peak: false,
        }));
        assert_eq!(t.show(), "1.0000 EUR");
        t.add(&s);
        assert_eq!(t.show(), "unknown (currencies mixed)");
    }

    #[test]
    fn windows_and_currencies_parse_strictly() {
        assert_eq!(
            Window::parse("01:00-04:00"),
            Some(Window { from: 60, to: 240 })
        );
        assert_eq!(Window::parse("22:00-24:00").map(|w| w.to), Some(1440));
        for bad in ["4:00-1:00", "01:00", "25:00-26:00", "01:60-02:00", "x"] {
            assert_eq!(Window::parse(bad), None, "{bad}");
        }
        assert_eq!(Currency::parse("usd"), Some(Currency::USD));
        assert_eq!(Currency::parse("US$"), None);
        assert_eq!(Currency::parse(""), None);
    }
}
