// Drives `elspeth mcp` with the official MCP TypeScript SDK client over
// stdio, as an assistant would: initialize, list the tools, call every
// tool with valid arguments and check the answers against what is known of
// the fixture trail (tests/fixtures/mcp: four runs of ELSPETH 0.4.1), then
// check that writes through `query` are refused and errors are reported the
// way the MCP spec says. Prints "ok - ..." / "FAIL - ..." lines; exits 1 on
// any failure.
//   node client.mjs ELSPETH_BINARY TRAIL [facts]
// With "lmdb" as the third argument it only checks the basics on an LMDB
// Landscape of one run (test_mcp.sh's second part). With "compose ROOT" it
// drives the composer's tools with --root ROOT (ROOT/input.csv, 3 rows, and
// ROOT/many.csv, 3000) on a trail not there yet (test_mcp.sh's third part).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";

const [elspeth, trail, mode = "fixture", root = ""] = process.argv.slice(2);
let failures = 0;
const ok = (cond, name, detail = "") => {
  if (cond) console.log(`ok - ${name}`);
  else {
    failures++;
    console.log(`FAIL - ${name}${detail ? `: ${detail}` : ""}`);
  }
};

const RUN_FORK = "3b989e47b0ea43d3a4a3205620e75c00";
const RUN_ROUTING = "dc9b9bc05cbe425580c243a3b359bc67";
const RUN_FAILED = "8270fb5a971f4ca9b997f43528d4df3a";
const RUN_LLM = "a607874059f64ac9ae047a679d1823d5";

const transport = new StdioClientTransport({
  command: elspeth,
  args: ["mcp", "--database", trail, ...(mode === "compose" ? ["--root", root] : [])],
  stderr: "pipe",
});
let serverLog = "";
transport.stderr?.on("data", (d) => (serverLog += d));
const client = new Client({ name: "elspeth-test-client", version: "1.0.0" });

// A tool's JSON answer (its first text content, parsed).
async function call(name, args = {}) {
  const r = await client.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name} failed: ${r.content?.[0]?.text}`);
  return JSON.parse(r.content[0].text);
}

// The text of a tool error (isError: true), or null when it succeeded.
async function toolError(name, args) {
  const r = await client.callTool({ name, arguments: args });
  return r.isError ? r.content[0].text : null;
}

async function check(name, fn) {
  try {
    await fn();
  } catch (e) {
    ok(false, name, e.stack || String(e));
  }
}

async function fixture(tools) {
  const names = tools.map((t) => t.name);
  const expected = ["list_runs", "get_run", "get_run_summary", "list_nodes", "list_rows",
    "list_tokens", "get_node_states", "get_calls", "get_errors", "explain_token",
    "get_dag_structure", "get_performance_report", "get_error_analysis",
    "get_llm_usage_report", "get_outcome_analysis", "diagnose", "get_failure_context",
    "describe_schema", "query", "list_operations", "get_operation_calls",
    "get_recent_activity"];
  ok(expected.every((n) => names.includes(n)) && names.length === expected.length + 8,
    "tools/list has ELSPETH's 22 tools (and the composer's 8)", names.join(","));
  ok(tools.every((t) => t.inputSchema?.type === "object" && t.description),
    "every tool has a description and an object inputSchema");
  const runSchema = tools.find((t) => t.name === "get_run").inputSchema;
  ok(runSchema.required?.[0] === "run_id", "get_run requires run_id");

  // An id we need, read with the query tool itself.
  const first = async (sql) => Object.values((await call("query", { sql }))[0])[0];

  await check("list_runs", async () => {
    const runs = await call("list_runs");
    ok(runs.length === 4 && runs[0].run_id === RUN_LLM && runs[3].run_id === RUN_FORK,
      "list_runs: 4 runs, newest first", JSON.stringify(runs.map((r) => r.run_id)));
    const failed = await call("list_runs", { status: "failed", limit: 10 });
    ok(failed.length === 1 && failed[0].run_id === RUN_FAILED, "list_runs status=failed");
    ok(/^2026-11-26T09:\d\d:\d\d\.\d{6}$/.test(runs[0].started_at),
      "times as ELSPETH prints them", runs[0].started_at);
  });
  await check("get_run", async () => {
    const run = await call("get_run", { run_id: RUN_FORK });
    ok(run.status === "completed" && run.canonical_version === "sha256-rfc8785-v1" &&
      JSON.parse(run.settings_json).coalesce[0].name === "merge_results", "get_run");
    ok((await call("get_run", { run_id: "nope" })) === null, "get_run of no run is null");
  });
  await check("get_run_summary", async () => {
    const s = await call("get_run_summary", { run_id: RUN_ROUTING });
    ok(s.counts.rows === 18 && s.counts.tokens === 18 && s.counts.nodes === 9 &&
      s.counts.operations === 6 && s.errors.validation === 1 && s.errors.transform === 4 &&
      s.outcome_distribution.routed === 17 && s.outcome_distribution.quarantined === 1,
      "get_run_summary counts", JSON.stringify(s));
  });
  await check("list_nodes", async () => {
    const nodes = await call("list_nodes", { run_id: RUN_FORK });
    ok(nodes.length === 6 && nodes[0].node_type === "source" &&
      nodes[0].schema_fields.length === 5, "list_nodes");
  });
  await check("list_rows", async () => {
    const rows = await call("list_rows", { run_id: RUN_ROUTING, limit: 5, offset: 10 });
    ok(rows.length === 5 && rows[0].row_index === 10 && rows[4].row_index === 14,
      "list_rows pages", JSON.stringify(rows.map((r) => r.row_index)));
  });
  await check("list_tokens", async () => {
    const toks = await call("list_tokens", { run_id: RUN_FORK });
    ok(toks.length === 20 && toks.filter((t) => t.branch_name === "path_a").length === 5,
      "list_tokens: 20 tokens, 5 on path_a");
  });
  await check("get_node_states", async () => {
    const st = await call("get_node_states", { run_id: RUN_ROUTING, status: "failed" });
    ok(st.length === 5 && st.every((s) => s.status === "failed"), "get_node_states failed");
  });
  await check("get_calls", async () => {
    const state = await first("SELECT state_id FROM calls WHERE status = 'error'");
    const calls = await call("get_calls", { state_id: state });
    ok(calls.length === 1 && calls[0].status === "error" && calls[0].call_type === "http" &&
      JSON.parse(calls[0].error_json).status_code === 500, "get_calls: the HTTP 500");
  });
  await check("get_errors", async () => {
    const e = await call("get_errors", { run_id: RUN_ROUTING });
    ok(e.validation_errors.length === 1 && e.transform_errors.length === 4 &&
      e.validation_errors[0].row_data.amount === "not-a-number", "get_errors");
    const v = await call("get_errors", { run_id: RUN_ROUTING, error_type: "validation" });
    ok(!("transform_errors" in v), "get_errors error_type=validation");
  });
  await check("explain_token", async () => {
    const merged = await first(`SELECT token_id FROM tokens WHERE run_id = '${RUN_FORK}' ` +
      "AND join_group_id IS NOT NULL LIMIT 1");
    const x = await call("explain_token", { run_id: RUN_FORK, token_id: merged });
    ok(x.token.token_id === merged && x.parent_tokens.length === 2 &&
      x.outcome.outcome === "routed" && x.outcome.is_terminal === true &&
      x.divert_summary === null && x.node_states.length > 0, "explain_token of a merged token");
    const q = await first("SELECT token_id FROM token_outcomes WHERE outcome = 'quarantined'");
    const d = await call("explain_token", { run_id: RUN_ROUTING, token_id: q });
    ok(d.divert_summary?.divert_type === "quarantine" && d.validation_errors.length === 1,
      "explain_token of a quarantined token: divert_summary");
    const row = await first(`SELECT row_id FROM rows WHERE run_id = '${RUN_FORK}' LIMIT 1`);
    const amb = await toolError("explain_token", { run_id: RUN_FORK, row_id: row });
    ok(amb && amb.includes("terminal tokens across sinks"), "explain_token: an ambiguous row", amb);
  });
  await check("get_dag_structure", async () => {
    const g = await call("get_dag_structure", { run_id: RUN_FORK });
    ok(g.node_count === 6 && g.edge_count === 8 && g.mermaid.startsWith("graph TD\n"),
      "get_dag_structure");
  });
  await check("get_performance_report", async () => {
    const p = await call("get_performance_report", { run_id: RUN_ROUTING });
    ok(p.node_count === 9 && p.node_performance.length === 9 &&
      p.node_performance.find((n) => n.plugin === "keyword_filter").failures === 4,
      "get_performance_report");
  });
  await check("get_error_analysis", async () => {
    const a = await call("get_error_analysis", { run_id: RUN_ROUTING });
    ok(a.validation_errors.total === 1 && a.transform_errors.total === 4 &&
      a.transform_errors.by_transform[0].transform_plugin === "keyword_filter",
      "get_error_analysis");
  });
  await check("get_llm_usage_report", async () => {
    const u = await call("get_llm_usage_report", { run_id: RUN_LLM });
    ok(u.call_types.http === 6 && u.llm_summary.total_calls === 0, "get_llm_usage_report",
      JSON.stringify(u));
  });
  await check("get_outcome_analysis", async () => {
    const o = await call("get_outcome_analysis", { run_id: RUN_FORK });
    ok(o.summary.terminal_tokens === 20 && o.summary.fork_operations === 5 &&
      o.summary.join_operations === 5 && o.sink_distribution.output === 5,
      "get_outcome_analysis", JSON.stringify(o));
  });
  await check("diagnose", async () => {
    const d = await call("diagnose");
    ok(d.status === "CRITICAL" && d.problems[0].type === "failed_runs" &&
      d.problems[0].run_ids[0] === RUN_FAILED && d.recent_runs.length === 4, "diagnose");
  });
  await check("get_failure_context", async () => {
    const f = await call("get_failure_context", { run_id: RUN_FAILED });
    ok(f.run_status === "failed" && f.failed_node_states.length >= 1 &&
      f.failed_node_states[0].plugin.startsWith("config_gate"), "get_failure_context");
  });
  await check("describe_schema", async () => {
    const d = await call("describe_schema");
    ok(d.table_count === 20 && d.tables.nodes.primary_key.join() === "node_id,run_id",
      "describe_schema: ELSPETH's 20 tables");
  });
  await check("query", async () => {
    const rows = await call("query", {
      sql: "SELECT outcome, count(*) AS n FROM token_outcomes WHERE run_id = :run GROUP BY outcome",
      params: { run: RUN_FORK },
    });
    ok(rows.length === 3 && rows.find((r) => r.outcome === "coalesced").n === 10, "query with params");
  });
  await check("list_operations and get_operation_calls", async () => {
    const ops = await call("list_operations", { run_id: RUN_ROUTING });
    ok(ops.length === 6 && ops.filter((o) => o.operation_type === "sink_write").length === 5,
      "list_operations");
    ok((await call("get_operation_calls", { operation_id: ops[0].operation_id })).length === 0,
      "get_operation_calls");
  });
  await check("get_recent_activity", async () => {
    const a = await call("get_recent_activity", { minutes: 5 });
    ok(a.time_window_minutes === 5 && Array.isArray(a.runs), "get_recent_activity");
  });

  // Writes are refused, however spelled; the trail keeps its 4 runs.
  const writes = [
    "INSERT INTO runs (run_id) VALUES ('x')",
    "UPDATE runs SET status = 'completed'",
    "DELETE FROM token_outcomes",
    "ATTACH DATABASE '/tmp/elspeth-mcp-test-attached.db' AS other",
    "PRAGMA user_version = 42",
    "PRAGMA journal_mode = DELETE",
    "SELECT 1; DELETE FROM runs",
    "/* a comment */ drop table runs",
  ];
  for (const sql of writes) {
    await check(`refused: ${sql}`, async () => {
      const err = await toolError("query", { sql });
      ok(err && /Refused|one statement/.test(err), `query refuses: ${sql}`, String(err));
    });
  }
  await check("still 4 runs", async () => {
    const n = await first("SELECT count(*) AS n FROM runs");
    const outcomes = await first("SELECT count(*) AS n FROM token_outcomes");
    ok(n === 4 && outcomes === 43, "the trail is unchanged (4 runs, 43 outcomes)");
  });

  // Errors as the spec says: protocol errors for an unknown tool, tool
  // errors (isError) naming a bad argument.
  await check("unknown tool", async () => {
    try {
      await client.callTool({ name: "no_such_tool", arguments: {} });
      ok(false, "an unknown tool is a protocol error");
    } catch (e) {
      ok(e instanceof McpError && e.code === -32602 && e.message.includes("Unknown tool"),
        "an unknown tool is JSON-RPC error -32602", String(e));
    }
  });
  await check("bad argument", async () => {
    const err = await toolError("list_rows", { run_id: RUN_FORK, limit: "ten" });
    ok(err === "Invalid arguments: 'list_rows': 'limit' must be integer, got str",
      "a bad argument is a tool error naming it", String(err));
  });
}

// An LMDB Landscape of one run, exported on the fly.
async function lmdb() {
  const runs = await call("list_runs");
  ok(runs.length >= 1 && runs[0].status === "completed", "LMDB trail: list_runs", JSON.stringify(runs));
  const s = await call("get_run_summary", { run_id: runs[0].run_id });
  ok(s.counts.rows > 0 && s.counts.tokens >= s.counts.rows, "LMDB trail: get_run_summary",
    JSON.stringify(s.counts));
  const t = await call("query", { sql: "SELECT token_id FROM token_outcomes WHERE is_terminal = 1 LIMIT 1" });
  const x = await call("explain_token", { run_id: runs[0].run_id, token_id: t[0].token_id });
  ok(x.token.token_id === t[0].token_id && x.node_states.length > 0, "LMDB trail: explain_token");
  ok((await toolError("query", { sql: "DELETE FROM runs" }))?.startsWith("Refused"),
    "LMDB trail: writes refused");
}

// The composer's tools: the catalog, validation, runs under the root.
async function compose(tools) {
  const names = tools.map((t) => t.name);
  const mine = ["list_sources", "list_transforms", "list_sinks", "get_plugin_schema",
    "validate_settings", "run_pipeline", "get_pipeline_run", "cancel_pipeline_run"];
  ok(mine.every((n) => names.includes(n)) && names.length === 30,
    "tools/list: ELSPETH's 22 tools and the composer's 8", names.join(","));
  await check("catalog", async () => {
    const src = await call("list_sources");
    const csv = src.find((p) => p.name === "csv");
    ok(csv && csv.plugin_type === "source" &&
      csv.config_fields.find((f) => f.name === "path").required === true,
      "list_sources: csv with its options (path required)");
    const tr = await call("list_transforms");
    ok(tr.some((p) => p.name === "llm") && tr.some((p) => p.name === "batch_stats"),
      "list_transforms: transforms and aggregations");
    ok((await call("list_sinks")).map((p) => p.name).sort().join() === "aws_s3,csv,database,json,text",
      "list_sinks");
    const sch = await call("get_plugin_schema", { plugin_type: "transform", name: "llm" });
    ok(sch.json_schema.properties.pool_size.default === 32 &&
      sch.json_schema.additionalProperties === false, "get_plugin_schema: llm's options");
    const bad = await call("get_plugin_schema", { plugin_type: "sink", name: "nope" });
    ok(bad.error?.startsWith("Unknown sink plugin: nope. Available:"), "get_plugin_schema: unknown",
      JSON.stringify(bad));
  });
  const pipe = (input, extra = "") => `source:
  plugin: csv
  on_success: out
  options: {path: ${input}, schema: {mode: observed}, on_validation_failure: discard}
${extra}sinks:
  out: {plugin: csv, options: {path: out/${input}}}
landscape: {url: "lmdb://./state/audit.lmdb"}
`;
  await check("validate", async () => {
    const good = await call("validate_settings", { settings_yaml: pipe("input.csv") });
    ok(good.is_valid === true, "validate_settings: a good pipeline", JSON.stringify(good));
    const wired = await call("validate_settings",
      { settings_yaml: pipe("input.csv").replace("on_success: out", "on_success: nowhere") });
    ok(wired.is_valid === false && /posted\.yaml:3:\d+: source\.on_success/.test(wired.errors[0].message),
      "validate_settings: wired wrong, with line, column and key", JSON.stringify(wired));
    const out = await call("validate_settings", { settings_yaml: pipe("/etc/passwd") });
    ok(out.is_valid === false && out.errors[0].message.includes("outside"),
      "validate_settings: a file outside the root", JSON.stringify(out));
    const neither = await call("validate_settings", {});
    ok(neither.error === "give settings_path or settings_yaml, not both", "validate_settings: no settings");
  });
  await check("run", async () => {
    const started = await call("run_pipeline", { settings_yaml: pipe("input.csv") });
    ok(/^[0-9a-f]{16}$/.test(started.run_id) && started.status === "running",
      "run_pipeline: a run_id", JSON.stringify(started));
    let st;
    for (let i = 0; i < 300; i++) {
      st = await call("get_pipeline_run", { run_id: started.run_id });
      if (st.status !== "running") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    ok(st.status === "completed" && st.rows_processed === 3 && st.exit_code === 0 &&
      st.landscape_run_id === 1 && st.error === null, "get_pipeline_run: completed, 3 rows, Landscape run 1",
      JSON.stringify(st));
    const fs = await import("node:fs");
    ok(fs.readFileSync(`${root}/out/input.csv`, "utf8").trim().split("\n").length === 4,
      "its sink is written under the root");
    ok(fs.existsSync(`${root}/mcp-${started.run_id}.yaml`), "the posted settings are kept in the root");
    const refused = await call("run_pipeline", { settings_yaml: pipe("../escape.csv") });
    ok(refused.is_valid === false && refused.run_id === null, "run_pipeline: refused outside the root",
      JSON.stringify(refused));
    const slow = await call("run_pipeline", { settings_yaml: pipe("many.csv",
      "transforms:\n  - {name: slow, plugin: delay, input: out0, on_success: out, options: {ms: 20}}\n")
      .replace("on_success: out\n  options: {path: many.csv", "on_success: out0\n  options: {path: many.csv")
      .replace('landscape: {url: "lmdb://./state/audit.lmdb"}', 'landscape: {url: "lmdb://./slow-state"}\nconcurrency: {pipelining: {max_rows_in_flight: 4}}') });
    ok(/^[0-9a-f]{16}$/.test(slow.run_id ?? ""), "run_pipeline: a slow run starts", JSON.stringify(slow));
    await new Promise((r) => setTimeout(r, 1500));
    const mid = await call("get_pipeline_run", { run_id: slow.run_id });
    ok(mid.status === "running" && mid.rows_processed > 0, "get_pipeline_run: running, rows moving",
      JSON.stringify(mid));
    await call("cancel_pipeline_run", { run_id: slow.run_id });
    let end;
    for (let i = 0; i < 100; i++) {
      end = await call("get_pipeline_run", { run_id: slow.run_id });
      if (end.status !== "running") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    ok(end.status === "cancelled" && end.exit_code === 3 && end.rows_processed < 3000,
      "cancel_pipeline_run: stopped as ^C (exit 3, resumable)", JSON.stringify(end));
    ok((await call("get_pipeline_run", { run_id: "0000" })).error === "Run '0000' not found",
      "get_pipeline_run: an unknown run");
  });
  const noTrail = await toolError("list_runs", {});
  ok(noTrail?.startsWith("no audit trail at"), "the trail's tools without a trail say so", String(noTrail));
}

try {
  await client.connect(transport);
  const info = client.getServerVersion();
  ok(info?.name === "elspeth-landscape", "initialize: serverInfo", JSON.stringify(info));
  ok(client.getServerCapabilities()?.tools !== undefined, "initialize: the tools capability");
  await client.ping();
  ok(true, "ping");
  const { tools } = await client.listTools();
  if (mode === "lmdb") await lmdb();
  else if (mode === "compose") await compose(tools);
  else await fixture(tools);
} catch (e) {
  ok(false, "session", e.stack || String(e));
} finally {
  await client.close();
}
if (failures) console.log(`server stderr:\n${serverLog}`);
process.exit(failures ? 1 : 0);
