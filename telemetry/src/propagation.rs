//! W3C trace context between spans and the bus envelope.
//!
//! A request's [`TraceContext`] names the span that sent it, so the span that serves it
//! can be its child in another process. Both directions are free when no OpenTelemetry
//! layer is installed: [`inject`] answers an empty context and [`set_parent`] does nothing.

use kgmesh_schemas::TraceContext;
use opentelemetry::{
    propagation::{Extractor, Injector, TextMapPropagator},
    trace::TraceContextExt,
};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

const TRACEPARENT: &str = "traceparent";
const TRACESTATE: &str = "tracestate";

struct Carrier<'a>(&'a mut TraceContext);

impl Injector for Carrier<'_> {
    fn set(&mut self, key: &str, value: String) {
        match key {
            TRACEPARENT => self.0.traceparent = value,
            TRACESTATE => self.0.tracestate = value,
            _ => {}
        }
    }
}

struct Source<'a>(&'a TraceContext);

impl Extractor for Source<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        let value = match key {
            TRACEPARENT => &self.0.traceparent,
            TRACESTATE => &self.0.tracestate,
            _ => return None,
        };
        (!value.is_empty()).then_some(value.as_str())
    }

    fn keys(&self) -> Vec<&str> {
        vec![TRACEPARENT, TRACESTATE]
    }
}

/// The W3C context naming `span`, to put in a request's `Meta.trace` so that the
/// receiver's span becomes its child. Empty when `span` is not exported (no OpenTelemetry
/// layer, or the span is filtered out).
pub fn inject(span: &Span) -> TraceContext {
    let cx = span.context();
    let mut trace = TraceContext::default();
    if cx.span().span_context().is_valid() {
        TraceContextPropagator::new().inject_context(&cx, &mut Carrier(&mut trace));
    }
    trace
}

/// [`inject`] for the span the caller is in.
pub fn current() -> TraceContext {
    inject(&Span::current())
}

/// `Meta.trace` for a request sent from the current span: the current span when it is
/// exported, else `fallback` (the question's own trace, so that its id still reaches
/// every agent's logs).
pub fn current_or(fallback: TraceContext) -> TraceContext {
    let trace = current();
    if trace.is_empty() {
        fallback
    } else {
        trace
    }
}

/// Makes the remote span named by `parent` the parent of `span`. Call it before `span`
/// is first entered. False when there is nothing to link: no OpenTelemetry layer, an
/// empty or malformed `parent`, or a span already started.
pub fn set_parent(span: &Span, parent: &TraceContext) -> bool {
    if parent.is_empty() {
        return false;
    }
    let cx = TraceContextPropagator::new().extract(&Source(parent));
    if !cx.span().span_context().is_valid() {
        return false;
    }
    span.set_parent(cx).is_ok()
}

/// The trace context in bus or HTTP headers (`traceparent`, `tracestate`).
pub fn from_headers<'a>(mut get: impl FnMut(&str) -> Option<&'a str>) -> TraceContext {
    TraceContext {
        traceparent: get(TRACEPARENT).unwrap_or_default().to_owned(),
        tracestate: get(TRACESTATE).unwrap_or_default().to_owned(),
    }
}

/// The trace id (32 hex digits) of `span` when it is exported.
pub fn trace_id(span: &Span) -> Option<String> {
    let cx = span.context();
    let span_context = cx.span().span_context().clone();
    span_context
        .is_valid()
        .then(|| span_context.trace_id().to_string())
}
