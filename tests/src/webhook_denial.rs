//! Waiting for a validating webhook to deny: the first creates may race the webhook's endpoints becoming ready
//! (the API server then answers with its own error), so they are retried until the answer is the test webhook's
//! refusal (`test-webhook`: "denied by the test webhook"). An object admitted instead fails at once.

use crate::wait::eventually;
use kube::api::{Api, DynamicObject, PostParams};
use std::time::Duration;

/// Create `denied` until the test webhook refuses it; its message. `what` names the object in a failure.
pub async fn await_webhook_denial(
    api: &Api<DynamicObject>,
    denied: &DynamicObject,
    what: &str,
) -> anyhow::Result<String> {
    eventually(
        Duration::from_secs(60),
        "the validating webhook to deny",
        || async move {
            match api.create(&PostParams::default(), denied).await {
                Err(kube::Error::Api(e)) if e.message.contains("denied by the test webhook") => {
                    Ok(Some(e.message))
                }
                Err(kube::Error::Api(e)) => {
                    eprintln!("not yet the webhook's answer: {}", e.message);
                    Ok(None)
                }
                Err(e) => Err(e.into()),
                Ok(_) => anyhow::bail!("{what} was admitted"),
            }
        },
    )
    .await
}
