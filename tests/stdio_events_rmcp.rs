//! Live events driven by rmcp's own client over real stdio, in both generations, against the
//! fake SnowLuma WebSocket adapter: legacy `resources/subscribe` with the handler's
//! `on_resource_updated`, modern `Peer::listen` with `resourceSubscriptions`.

#[path = "support/fake_snowluma_ws.rs"]
mod fake_snowluma_ws;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/rmcp_client.rs"]
mod rmcp_client;

use fake_snowluma_ws::{FakeEventSocket, WsOptions, group_message};
use rmcp::model::{
    ReadResourceRequestParams, ResourceUpdatedNotificationParam, ServerNotification,
    SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{Value, json};
use tokio::process::Command;
use tokio::sync::mpsc;

/// Forwards legacy update notifications to the test.
struct Updates(mpsc::UnboundedSender<String>);

impl ClientHandler for Updates {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(params.uri);
    }
}

async fn connect(
    modern: bool,
    url: &str,
) -> (
    RunningService<RoleClient, Updates>,
    mpsc::UnboundedReceiver<String>,
) {
    let mut command = Command::new(raw_client::binary());
    command
        .env("SNOWLUMA_MCP_MODE", "read")
        .env("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/")
        .env("SNOWLUMA_MCP_EVENTS_URL", url)
        .env_remove("SNOWLUMA_MCP_TOKEN")
        .env("SNOWLUMA_MCP_LOG", "warn");
    let (sender, receiver) = mpsc::unbounded_channel();
    let handler = Updates(sender);
    (
        rmcp_client::connect(handler, command, modern).await,
        receiver,
    )
}

/// tools/call, checked against the advertised outputSchema; returns structuredContent.
async fn call(client: &RunningService<RoleClient, Updates>, name: &str, args: Value) -> Value {
    rmcp_client::call_listed(client, name, args).await.1
}

async fn read_page(client: &RunningService<RoleClient, Updates>, uri: &str) -> Value {
    let result = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .expect("resources/read");
    let text = serde_json::to_value(&result.contents[0]).unwrap()["text"]
        .as_str()
        .unwrap()
        .to_string();
    serde_json::from_str(&text).unwrap()
}

async fn subscribe(client: &RunningService<RoleClient, Updates>) -> String {
    let sub = call(
        client,
        "subscribe_events",
        json!({ "self_id": 10001, "group_ids": [20001] }),
    )
    .await;
    sub["result"]["uri"].as_str().expect("uri").to_string()
}

#[tokio::test]
async fn legacy_rmcp_client_subscribes_reads_and_unsubscribes() {
    let socket = FakeEventSocket::start(WsOptions::default());
    let (client, mut updates) = connect(false, &socket.url).await;
    let uri = subscribe(&client).await;
    #[allow(deprecated)]
    client
        .subscribe(SubscribeRequestParams::new(uri.clone()))
        .await
        .expect("resources/subscribe");
    socket.push(&group_message(10001, 20001, 30001, "rmcp legacy"));
    let updated = tokio::time::timeout(raw_client::WAIT, updates.recv())
        .await
        .expect("an update within the bound");
    assert_eq!(updated.as_deref(), Some(uri.as_str()));
    let page = read_page(&client, &uri).await;
    assert_eq!(page["entries"][0]["event"]["raw_message"], "rmcp legacy");
    let waited = call(
        &client,
        "read_events",
        json!({ "uri": uri, "after": page["next_cursor"], "wait_ms": 0 }),
    )
    .await;
    assert_eq!(waited["result"]["entries"], json!([]));
    #[allow(deprecated)]
    client
        .unsubscribe(UnsubscribeRequestParams::new(uri.clone()))
        .await
        .expect("resources/unsubscribe");
    let gone = call(&client, "read_events", json!({ "uri": uri, "wait_ms": 0 })).await;
    assert_eq!(gone["diagnostics"]["kind"], "unknown_resource");
    client.cancel().await.ok();
}

#[tokio::test]
async fn modern_rmcp_client_listens_and_releases_with_the_tool() {
    let socket = FakeEventSocket::start(WsOptions::default());
    let (client, _updates) = connect(true, &socket.url).await;
    let uri = subscribe(&client).await;
    let mut filter = SubscriptionFilter::new();
    filter.resource_subscriptions = Some(vec![uri.clone()]);
    let mut subscription = client.peer().listen(filter).await.expect("listen");
    assert_eq!(
        subscription.acknowledged().resource_subscriptions,
        Some(vec![uri.clone()])
    );
    socket.push(&group_message(10001, 20001, 30001, "rmcp modern"));
    let notification = tokio::time::timeout(raw_client::WAIT, subscription.next())
        .await
        .expect("a notification within the bound")
        .expect("listen stream")
        .expect("not ended");
    match notification {
        ServerNotification::ResourceUpdatedNotification(n) => assert_eq!(n.params.uri, uri),
        other => panic!("unexpected notification {other:?}"),
    }
    let page = read_page(&client, &uri).await;
    assert_eq!(page["entries"][0]["event"]["raw_message"], "rmcp modern");
    let released = call(&client, "unsubscribe_events", json!({ "uri": uri })).await;
    assert_eq!(released["result"]["released"], uri.as_str());
    client.cancel().await.ok();
}
