//! What an agent's requests cost, and the budget `--max-cost` sets. Each response's usage is
//! priced with the agent's own profile (its model's price) at the request's time, and added
//! to one [`Spend`] that the agent's clones share: its subagents spend from the same purse,
//! each at its own model's rates.

use std::sync::{Arc, Mutex};

use super::Agent;
use crate::context::prune::Cache;
use crate::model::{Cost, Spend, Usage};
use crate::session::Session;

/// What a run may spend and has spent, shared by the agents of one run.
#[derive(Debug, Clone, Default)]
pub struct Budget {
    /// The run ends after the request that takes `spent` past this.
    max_cost: Option<f64>,
    /// The time every request is priced at (`HX_NOW`, for tests); `None`: the clock's.
    fixed_now: Option<u64>,
    spent: Arc<Mutex<Spend>>,
}

impl Budget {
    /// This budget with a limit and a fixed time, spending from the same purse.
    pub(super) fn limited(&self, max_cost: Option<f64>, fixed_now: Option<u64>) -> Budget {
        Budget {
            max_cost,
            fixed_now,
            spent: self.spent.clone(),
        }
    }
}

impl Agent {
    /// What a request with `usage` cost now at this agent's prices, counted in what the run
    /// spent; `None` without a price (counted as unpriced).
    pub fn cost_of(&self, usage: &Usage) -> Option<Cost> {
        let now = self.now();
        let cost = self.profile.price().map(|p| p.cost(usage, now));
        self.spent_mut().add_cost(cost);
        cost
    }

    /// What the run's requests (its subagents' included) cost so far.
    pub fn spent(&self) -> Spend {
        *self.spent_mut()
    }

    fn spent_mut(&self) -> std::sync::MutexGuard<'_, Spend> {
        self.budget.spent.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The one line saying that `what` breaks the prompt cache's prefix: the next request
    /// misses about `tokens` tokens that would have been hits, and what that costs more.
    pub fn cache_broken(&self, what: &str, tokens: u64) {
        let cost = self.profile.price().map_or_else(
            || "its cost unknown".to_string(),
            |p| format!("{} more than hits", p.miss_extra(tokens, self.now()).show()),
        );
        self.events.warn(
            &self.hook_cx.scope,
            &crate::text::Warning::notice(format!(
                "{what}: the next request misses the prompt cache for about {} tokens ({cost})",
                crate::text::thousands(tokens)
            )),
        );
    }

    /// What the prompt cache makes of rewritten history, for weighing a prune: a hit's price
    /// as a share of a miss's from the price table. Without a price, a server that has
    /// reported cache hits is taken to charge a tenth for them (OpenAI's discount on its
    /// recent models, the dearest common case short of DeepSeek's); one that never has keeps
    /// no cache.
    pub(crate) fn cache(&self, session: &Session) -> Cache {
        match self.profile.price() {
            Some(p) => {
                let r = p.rates_at(self.now()).0;
                if r.input_cache_miss > 0.0 {
                    Cache::HitShare(r.input_cache_hit / r.input_cache_miss)
                } else {
                    Cache::None
                }
            }
            None if session.stats.usage.prompt_cache_hit_tokens > 0 => Cache::HitShare(0.1),
            None => Cache::None,
        }
    }

    /// The time requests are priced at: `HX_NOW`'s, else the clock's.
    fn now(&self) -> u64 {
        self.budget.fixed_now.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        })
    }

    /// The limit `--max-cost` set, when the run's requests (its subagents' included) have
    /// passed it: the amount spent, shown.
    pub fn over_budget(&self) -> Option<String> {
        let max = self.budget.max_cost?;
        let spent = self.spent();
        let (nanos, currency) = spent.known().or(spent.currency.map(|c| (spent.nanos, c)))?;
        (nanos as f64 / 1e9 > max).then(|| {
            format!(
                "the run cost {} and passed --max-cost {}",
                currency.show(nanos),
                currency.show((max * 1e9) as u64)
            )
        })
    }
}
