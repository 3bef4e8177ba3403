//! The one `Requeue` policy of catalog-operator's object actors (CatalogSource, Subscription, InstallPlan):
//! a requeue with a delay comes back after it as an immediate one; an immediate one reconciles. Each actor's
//! `Handler<Requeue>` delegates here (a blanket impl of actix's `Handler` is not allowed by the orphan rule).

use actix::{Actor, AsyncContext, Context, Handler};
use messages::msg::Requeue;

pub fn handle<A>(
    act: &mut A,
    msg: Requeue,
    ctx: &mut Context<A>,
    reconcile: fn(&mut A, &mut Context<A>),
) where
    A: Actor<Context = Context<A>> + Handler<Requeue>,
{
    match msg.after {
        Some(delay) => {
            ctx.notify_later(
                Requeue {
                    reason: msg.reason,
                    after: None,
                },
                delay,
            );
        }
        None => reconcile(act, ctx),
    }
}
