// A synthetic but realistic tool catalogue for the prompt-cache benchmark: servers shaped like the
// MCP servers hosts connect (a code host, a filesystem, chat, a tracker, a database, a cluster, …),
// each tool a full definition with a description and a parameters schema whose properties carry
// descriptions, enums and paging the way published servers write them. Deterministic: the same T
// gives the same tools, byte for byte.
import type { FunctionToolLike } from "@loopwright/schema-compat";
import type { CatalogServer } from "../src/index.js";

type Schema = Record<string, unknown>;
type Verb = "list" | "get" | "create" | "update" | "delete" | "search";

interface Resource {
  /** Singular, snake_case: "issue", "pull_request". */
  name: string;
  /** Fields a create or an update takes. */
  fields: Record<string, Schema>;
  verbs: Verb[];
  /** Filters a list takes beyond paging. */
  filters?: Record<string, Schema>;
  /** Tool names that are not verb_resource, the way servers name them ("read_file", "run_command"). */
  names?: Partial<Record<Verb, string>>;
}

interface Server {
  name: string;
  /** What the server talks to, for descriptions: "a GitHub repository". */
  scope: string;
  /** Parameters every tool of the server takes (owner and repo, a workspace id). */
  common: Record<string, Schema>;
  resources: Resource[];
}

const str = (description: string): Schema => ({ type: "string", description });
const int = (description: string, extra: Schema = {}): Schema => ({ type: "integer", description, ...extra });
const bool = (description: string): Schema => ({ type: "boolean", description });
const oneOf = (description: string, values: string[]): Schema => ({
  type: "string",
  enum: values,
  description,
});
const list = (description: string, items: Schema = { type: "string" }): Schema => ({
  type: "array",
  items,
  description,
});

const PAGING: Record<string, Schema> = {
  page: int("Page number for pagination (min 1)", { minimum: 1 }),
  perPage: int("Results per page for pagination (min 1, max 100)", { minimum: 1, maximum: 100 }),
};
const SORTING: Record<string, Schema> = {
  sort: oneOf("What to sort results by", ["created", "updated", "name"]),
  direction: oneOf("The direction of the sort", ["asc", "desc"]),
};

const SERVERS: Server[] = [
  {
    name: "github",
    scope: "a GitHub repository",
    common: { owner: str("Repository owner (username or organization)"), repo: str("Repository name") },
    resources: [
      {
        name: "issue",
        verbs: ["list", "get", "create", "update", "search"],
        fields: {
          title: str("Issue title"),
          body: str("Issue body content, in Markdown"),
          labels: list("Labels to apply to this issue"),
          assignees: list("Usernames to assign to this issue"),
          milestone: int("Milestone number"),
          state: oneOf("New state", ["open", "closed"]),
        },
        filters: {
          state: oneOf("Filter by state", ["open", "closed", "all"]),
          labels: list("Filter by labels"),
          since: str("Filter by date (ISO 8601 timestamp)"),
        },
      },
      {
        name: "issue_comment",
        verbs: ["list", "create", "update", "delete"],
        fields: {
          issue_number: int("Issue number to comment on"),
          body: str("Comment content, in Markdown"),
        },
      },
      {
        name: "pull_request",
        verbs: ["list", "get", "create", "update", "search"],
        fields: {
          title: str("PR title"),
          body: str("PR description"),
          head: str("Branch containing changes"),
          base: str("Branch to merge into"),
          draft: bool("Create as draft PR"),
          maintainer_can_modify: bool("Allow maintainer edits"),
        },
        filters: {
          state: oneOf("Filter by state", ["open", "closed", "all"]),
          head: str("Filter by head user/org and branch"),
          base: str("Filter by base branch"),
        },
      },
      {
        name: "pull_request_review",
        verbs: ["list", "create"],
        fields: {
          pull_number: int("Pull request number"),
          body: str("Review comment text"),
          event: oneOf("Review action to perform", ["APPROVE", "REQUEST_CHANGES", "COMMENT"]),
          commit_id: str("SHA of commit to review"),
        },
      },
      {
        name: "branch",
        verbs: ["list", "get", "create", "delete"],
        fields: {
          branch: str("Name for the branch"),
          from_branch: str("Source branch (defaults to repo default)"),
        },
      },
      {
        name: "file_contents",
        verbs: ["get", "update", "delete"],
        fields: {
          path: str("Path to the file"),
          content: str("Content of the file"),
          message: str("Commit message"),
          branch: str("Branch to create/update the file in"),
          sha: str("SHA of file being replaced (required if the file exists)"),
        },
      },
      {
        name: "commit",
        verbs: ["list", "get"],
        fields: { sha: str("Commit SHA, branch name, or tag name") },
        filters: {
          sha: str("SHA or branch to start listing commits from"),
          path: str("Only commits touching this path"),
        },
      },
      {
        name: "release",
        verbs: ["list", "get", "create"],
        fields: {
          tag_name: str("The name of the tag"),
          name: str("The name of the release"),
          body: str("Text describing the contents of the tag"),
          prerelease: bool("Whether to identify the release as a prerelease"),
        },
      },
      {
        name: "workflow_run",
        verbs: ["list", "get"],
        fields: { run_id: int("The unique identifier of the workflow run") },
        filters: {
          branch: str("Returns workflow runs associated with a branch"),
          status: oneOf("Returns workflow runs with the check run status", [
            "completed",
            "in_progress",
            "queued",
            "failure",
            "success",
          ]),
        },
      },
    ],
  },
  {
    name: "filesystem",
    scope: "the allowed directories on disk",
    common: {},
    resources: [
      {
        name: "file",
        verbs: ["get", "create", "update", "delete", "search"],
        names: { get: "read_file", create: "write_file", update: "move_file", search: "search_files" },
        fields: {
          path: str("Path of the file, inside an allowed directory"),
          content: str("Full text content to write"),
          encoding: oneOf("Text encoding of the file", ["utf-8", "latin1", "base64"]),
          head: int("If provided, returns only the first N lines of the file"),
          tail: int("If provided, returns only the last N lines of the file"),
        },
      },
      {
        name: "directory",
        verbs: ["list", "create", "get"],
        fields: {
          path: str("Path of the directory"),
          recursive: bool("Whether to list entries below subdirectories as well"),
          excludePatterns: list("Glob patterns of entries to leave out"),
        },
      },
      {
        name: "file_info",
        verbs: ["get"],
        fields: { path: str("Path of the file or directory") },
      },
      {
        name: "edit",
        verbs: ["create"],
        names: { create: "edit_file" },
        fields: {
          path: str("Path of the file to edit"),
          edits: list("Each edit replaces an exact oldText with newText", {
            type: "object",
            properties: {
              oldText: str("Text to search for, exactly"),
              newText: str("Text to replace it with"),
            },
            required: ["oldText", "newText"],
          }),
          dryRun: bool("Preview the changes as a git-style diff without applying them"),
        },
      },
    ],
  },
  {
    name: "shell",
    scope: "the workspace's shell",
    common: { cwd: str("Working directory, relative to the workspace root") },
    resources: [
      {
        name: "command",
        verbs: ["create", "get"],
        names: { create: "run_command", get: "get_command_output" },
        fields: {
          command: str("The command line to run, as the shell reads it"),
          timeout_ms: int("Milliseconds before the command is killed", { minimum: 1 }),
          env: {
            type: "object",
            additionalProperties: { type: "string" },
            description: "Extra environment variables",
          },
        },
      },
      {
        name: "process",
        verbs: ["list", "delete"],
        fields: { pid: int("Process id"), signal: oneOf("Signal to send", ["SIGTERM", "SIGKILL", "SIGINT"]) },
      },
    ],
  },
  {
    name: "slack",
    scope: "a Slack workspace",
    common: { workspace_id: str("The Slack workspace (team) id") },
    resources: [
      {
        name: "channel",
        verbs: ["list", "get", "create"],
        fields: {
          name: str("Channel name, lowercase without spaces"),
          is_private: bool("Create a private channel"),
          topic: str("Channel topic"),
        },
      },
      {
        name: "message",
        verbs: ["list", "create", "update", "delete", "search"],
        fields: {
          channel_id: str("The ID of the channel"),
          text: str("The message text, in Slack mrkdwn"),
          thread_ts: str("Timestamp of the parent message, to reply in a thread"),
          unfurl_links: bool("Whether to unfurl links in the message"),
        },
      },
      {
        name: "reaction",
        verbs: ["create", "delete"],
        fields: {
          channel_id: str("The ID of the channel containing the message"),
          timestamp: str("The timestamp of the message to react to"),
          reaction: str("The name of the emoji reaction (without ::)"),
        },
      },
      {
        name: "user",
        verbs: ["list", "get"],
        fields: { user_id: str("The ID of the user") },
      },
    ],
  },
  {
    name: "jira",
    scope: "a Jira site",
    common: { site: str("The Atlassian site, e.g. example.atlassian.net") },
    resources: [
      {
        name: "ticket",
        verbs: ["list", "get", "create", "update", "search"],
        fields: {
          project_key: str("Key of the project, e.g. ENG"),
          summary: str("One-line summary"),
          description: str("Description, in Atlassian wiki markup"),
          issue_type: oneOf("Type of the ticket", ["Bug", "Task", "Story", "Epic"]),
          priority: oneOf("Priority", ["Highest", "High", "Medium", "Low", "Lowest"]),
          assignee: str("Account id of the assignee"),
        },
        filters: { jql: str("A JQL query to filter by") },
      },
      {
        name: "transition",
        verbs: ["list", "create"],
        fields: {
          ticket_key: str("Key of the ticket, e.g. ENG-123"),
          transition_id: str("Id of the transition"),
        },
      },
      {
        name: "sprint",
        verbs: ["list", "get", "update"],
        fields: {
          board_id: int("Id of the board"),
          name: str("Sprint name"),
          goal: str("Sprint goal"),
          state: oneOf("Sprint state", ["future", "active", "closed"]),
        },
      },
    ],
  },
  {
    name: "postgres",
    scope: "a PostgreSQL database",
    common: { database: str("Database name") },
    resources: [
      {
        name: "query",
        verbs: ["create"],
        names: { create: "run_query" },
        fields: { sql: str("A read-only SQL query"), params: list("Bind parameters") },
      },
      {
        name: "table",
        verbs: ["list", "get"],
        fields: { schema: str("Schema name (default public)"), table: str("Table name") },
      },
      {
        name: "index",
        verbs: ["list", "create", "delete"],
        fields: {
          table: str("Table name"),
          columns: list("Columns to index"),
          unique: bool("Create a unique index"),
        },
      },
      {
        name: "migration",
        verbs: ["list", "create"],
        fields: { name: str("Migration name"), up: str("SQL to apply"), down: str("SQL to revert") },
      },
    ],
  },
  {
    name: "kubernetes",
    scope: "a Kubernetes cluster",
    common: { context: str("kubeconfig context to use"), namespace: str("Namespace (default: default)") },
    resources: [
      {
        name: "pod",
        verbs: ["list", "get", "delete"],
        fields: { name: str("Pod name"), container: str("Container name") },
        filters: { labelSelector: str("Label selector, e.g. app=web") },
      },
      {
        name: "deployment",
        verbs: ["list", "get", "update"],
        fields: {
          name: str("Deployment name"),
          replicas: int("Desired replica count", { minimum: 0 }),
          image: str("Container image to roll out"),
        },
      },
      {
        name: "pod_log",
        verbs: ["get"],
        fields: {
          name: str("Pod name"),
          container: str("Container name"),
          tailLines: int("Lines from the end"),
          previous: bool("Logs of the previous container instance"),
        },
      },
      { name: "service", verbs: ["list", "get"], fields: { name: str("Service name") } },
      {
        name: "event",
        verbs: ["list"],
        fields: {},
        filters: { fieldSelector: str("Field selector, e.g. involvedObject.name=web") },
      },
    ],
  },
  {
    name: "calendar",
    scope: "a Google Calendar account",
    common: { calendar_id: str("Calendar id; 'primary' for the user's own") },
    resources: [
      {
        name: "event",
        verbs: ["list", "get", "create", "update", "delete", "search"],
        fields: {
          summary: str("Title of the event"),
          start: str("Start time, RFC 3339"),
          end: str("End time, RFC 3339"),
          attendees: list("Email addresses of the attendees"),
          location: str("Where it takes place"),
          timeZone: str("IANA time zone, e.g. Europe/Paris"),
        },
        filters: { timeMin: str("Lower bound (RFC 3339)"), timeMax: str("Upper bound (RFC 3339)") },
      },
      {
        name: "free_busy",
        verbs: ["get"],
        fields: {
          timeMin: str("Start of the interval"),
          timeMax: str("End of the interval"),
          items: list("Calendar ids to query"),
        },
      },
    ],
  },
  {
    name: "gmail",
    scope: "a Gmail mailbox",
    common: { userId: str("The user's email address, or 'me'") },
    resources: [
      {
        name: "email",
        verbs: ["list", "get", "create", "delete", "search"],
        fields: {
          to: list("Recipients"),
          cc: list("CC recipients"),
          subject: str("Subject line"),
          body: str("Plain-text body"),
          threadId: str("Thread to reply in"),
        },
        filters: { q: str("Gmail search query, e.g. from:alice is:unread") },
      },
      {
        name: "label",
        verbs: ["list", "create", "delete"],
        fields: { name: str("Label name"), color: str("Background color, hex") },
      },
      {
        name: "draft",
        verbs: ["list", "create", "update"],
        fields: { to: list("Recipients"), subject: str("Subject line"), body: str("Plain-text body") },
      },
    ],
  },
  {
    name: "notion",
    scope: "a Notion workspace",
    common: {},
    resources: [
      {
        name: "page",
        verbs: ["get", "create", "update", "search"],
        fields: {
          parent_id: str("Id of the parent page or database"),
          title: str("Page title"),
          content: str("Page content, in Markdown"),
          icon: str("An emoji for the page icon"),
        },
      },
      {
        name: "database",
        verbs: ["list", "get", "create"],
        fields: {
          parent_id: str("Id of the parent page"),
          title: str("Database title"),
          properties: { type: "object", description: "Property schema, by property name" },
        },
      },
      {
        name: "block",
        verbs: ["get", "update", "delete"],
        fields: { block_id: str("Id of the block"), content: str("New text of the block") },
      },
      {
        name: "comment",
        verbs: ["list", "create"],
        fields: { page_id: str("Id of the page"), text: str("Comment text") },
      },
    ],
  },
  {
    name: "sentry",
    scope: "a Sentry organization",
    common: { organization_slug: str("The organization's slug"), project_slug: str("The project's slug") },
    resources: [
      {
        name: "issue_event",
        verbs: ["list", "get"],
        fields: { issue_id: str("Sentry issue id"), event_id: str("Event id, or 'latest'") },
      },
      {
        name: "error_group",
        verbs: ["list", "get", "update", "search"],
        fields: {
          status: oneOf("New status", ["resolved", "ignored", "unresolved"]),
          assignedTo: str("Actor id or username"),
        },
        filters: { query: str("Sentry search query"), statsPeriod: oneOf("Time window", ["24h", "14d", ""]) },
      },
      { name: "release_health", verbs: ["get"], fields: { version: str("Release version") } },
    ],
  },
  {
    name: "stripe",
    scope: "a Stripe account",
    common: {},
    resources: [
      {
        name: "customer",
        verbs: ["list", "get", "create", "update", "search"],
        fields: {
          email: str("Customer's email address"),
          name: str("Full name or business name"),
          metadata: {
            type: "object",
            additionalProperties: { type: "string" },
            description: "Key-value pairs to store",
          },
        },
      },
      {
        name: "invoice",
        verbs: ["list", "get", "create"],
        fields: {
          customer: str("Customer id"),
          auto_advance: bool("Whether Stripe finalizes it automatically"),
          days_until_due: int("Days until due"),
        },
      },
      {
        name: "refund",
        verbs: ["list", "create"],
        fields: {
          payment_intent: str("Payment intent to refund"),
          amount: int("Amount in the smallest currency unit"),
          reason: oneOf("Reason", ["duplicate", "fraudulent", "requested_by_customer"]),
        },
      },
      {
        name: "subscription",
        verbs: ["list", "get", "update", "delete"],
        fields: { items: list("Price ids"), cancel_at_period_end: bool("Cancel at the end of the period") },
      },
    ],
  },
  {
    name: "s3",
    scope: "an S3-compatible object store",
    common: { bucket: str("Bucket name"), region: str("AWS region, e.g. eu-west-1") },
    resources: [
      {
        name: "object",
        verbs: ["list", "get", "create", "delete"],
        fields: { key: str("Object key"), body: str("Object content"), contentType: str("MIME type") },
        filters: { prefix: str("Only keys with this prefix") },
      },
      {
        name: "presigned_url",
        verbs: ["create"],
        fields: {
          key: str("Object key"),
          expiresIn: int("Seconds the URL stays valid"),
          method: oneOf("HTTP method", ["GET", "PUT"]),
        },
      },
      { name: "bucket_policy", verbs: ["get", "update"], fields: { policy: str("Policy document, JSON") } },
    ],
  },
  {
    name: "linear",
    scope: "a Linear workspace",
    common: { teamId: str("Team id") },
    resources: [
      {
        name: "task",
        verbs: ["list", "get", "create", "update", "search"],
        fields: {
          title: str("Title"),
          description: str("Markdown description"),
          priority: int("0 none, 1 urgent … 4 low", { minimum: 0, maximum: 4 }),
          stateId: str("Workflow state id"),
          labelIds: list("Label ids"),
        },
      },
      { name: "cycle", verbs: ["list", "get"], fields: { cycleId: str("Cycle id") } },
      {
        name: "project",
        verbs: ["list", "get", "create", "update"],
        fields: { name: str("Project name"), targetDate: str("Target date, YYYY-MM-DD") },
      },
    ],
  },
  {
    name: "browser",
    scope: "a headless browser",
    common: {},
    resources: [
      {
        name: "page",
        verbs: ["create", "get", "delete"],
        fields: {
          url: str("URL to open"),
          waitUntil: oneOf("When navigation counts as done", ["load", "domcontentloaded", "networkidle"]),
        },
      },
      {
        name: "screenshot",
        verbs: ["create"],
        fields: {
          selector: str("CSS selector of an element; the full page if absent"),
          fullPage: bool("Capture the whole scrollable page"),
        },
      },
      {
        name: "element",
        verbs: ["get", "update", "search"],
        fields: { selector: str("CSS selector"), text: str("Text to type into it"), click: bool("Click it") },
      },
      {
        name: "console_message",
        verbs: ["list"],
        fields: {},
        filters: { level: oneOf("Lowest level to include", ["debug", "info", "warning", "error"]) },
      },
    ],
  },
  {
    name: "confluence",
    scope: "a Confluence site",
    common: { spaceKey: str("Key of the space") },
    resources: [
      {
        name: "wiki_page",
        verbs: ["list", "get", "create", "update", "search"],
        fields: {
          title: str("Page title"),
          body: str("Body in storage format"),
          parentId: str("Id of the parent page"),
        },
        filters: { cql: str("CQL query") },
      },
      {
        name: "attachment",
        verbs: ["list", "create"],
        fields: { pageId: str("Page id"), filename: str("File name"), content: str("Base64 content") },
      },
    ],
  },
  {
    name: "docker",
    scope: "the local Docker engine",
    common: {},
    resources: [
      {
        name: "container",
        verbs: ["list", "get", "create", "delete"],
        fields: {
          image: str("Image to run"),
          name: str("Container name"),
          ports: list("Port mappings, host:container"),
          env: list("Environment, KEY=value"),
        },
        filters: { all: bool("Include stopped containers") },
      },
      {
        name: "image",
        verbs: ["list", "create", "delete"],
        fields: { image: str("Image reference, e.g. node:20"), platform: str("Platform, e.g. linux/amd64") },
      },
      {
        name: "container_log",
        verbs: ["get"],
        fields: {
          container: str("Container name or id"),
          tail: int("Lines from the end"),
          since: str("Only logs since this time"),
        },
      },
      {
        name: "volume",
        verbs: ["list", "create", "delete"],
        fields: { name: str("Volume name"), driver: str("Volume driver") },
      },
    ],
  },
];

function words(name: string): string {
  return name.replace(/_/g, " ");
}

function plural(name: string): string {
  const w = words(name);
  if (/(ss|ch|sh|x)$/.test(w)) return `${w}es`;
  return w.endsWith("s") ? w : w.endsWith("y") ? `${w.slice(0, -1)}ies` : `${w}s`;
}

function idField(resource: Resource): Record<string, Schema> {
  return { [`${resource.name}_id`]: str(`The id of the ${words(resource.name)}`) };
}

function describeTool(server: Server, resource: Resource, verb: Verb): string {
  const thing = words(resource.name);
  switch (verb) {
    case "list":
      return `List ${plural(resource.name)} in ${server.scope}, newest first. For pagination, use the 'page' and 'perPage' parameters.`;
    case "get":
      return `Get the details of one ${thing} in ${server.scope}, by its id.`;
    case "create":
      return `Create a new ${thing} in ${server.scope}. Returns the created ${thing} with its id.`;
    case "update":
      return `Update an existing ${thing} in ${server.scope}. Only the fields given are changed.`;
    case "delete":
      return `Delete a ${thing} from ${server.scope}. This cannot be undone.`;
    case "search":
      return `Search ${plural(resource.name)} in ${server.scope} with a query string; returns the best matches first.`;
  }
}

function parametersFor(server: Server, resource: Resource, verb: Verb): Schema {
  let properties: Record<string, Schema>;
  let required: string[];
  switch (verb) {
    case "list":
      properties = { ...server.common, ...(resource.filters ?? {}), ...SORTING, ...PAGING };
      required = Object.keys(server.common);
      break;
    case "get":
    case "delete":
      properties = { ...server.common, ...idField(resource) };
      required = Object.keys(properties);
      break;
    case "create":
      properties = { ...server.common, ...resource.fields };
      required = [...Object.keys(server.common), ...Object.keys(resource.fields).slice(0, 2)];
      break;
    case "update":
      properties = { ...server.common, ...idField(resource), ...resource.fields };
      required = [...Object.keys(server.common), ...Object.keys(idField(resource))];
      break;
    case "search":
      properties = { ...server.common, query: str(`Search query for ${plural(resource.name)}`), ...PAGING };
      required = [...Object.keys(server.common), "query"];
      break;
  }
  return { type: "object", properties, required };
}

/** Every tool of one server, in the order its resources and verbs are listed. */
function serverTools(server: Server): FunctionToolLike[] {
  return server.resources.flatMap((resource) =>
    resource.verbs.map((verb) => ({
      type: "function" as const,
      function: {
        name:
          resource.names?.[verb] ??
          `${verb}_${verb === "list" || verb === "search" ? plural(resource.name).replace(/ /g, "_") : resource.name}`,
        description: describeTool(server, resource, verb),
        parameters: parametersFor(server, resource, verb),
      },
    })),
  );
}

/** A run's tools and their catalogue. */
export interface Toolset {
  tools: FunctionToolLike[];
  catalog: CatalogServer[];
}

/**
 * The first `size` tools, whole servers first in the order above (the task's servers come first),
 * each tool's name prefixed with its server where two servers would otherwise share it.
 */
export function toolset(size: number): Toolset {
  const tools: FunctionToolLike[] = [];
  const catalog: CatalogServer[] = [];
  const seen = new Set<string>();
  for (let round = 0; tools.length < size; round++) {
    for (const server of SERVERS) {
      if (tools.length >= size) break;
      let own = serverTools(server);
      if (round > 0) {
        // Past one of each server, a second copy stands for another instance (a second cluster, a
        // second workspace), as a host with many connections has.
        own = own.map((tool) => ({
          ...tool,
          function: { ...tool.function, name: `${tool.function.name}_${round + 1}` },
        }));
      }
      const entries: { name: string; description: string }[] = [];
      for (const tool of own) {
        if (tools.length >= size) break;
        let name = tool.function.name;
        if (seen.has(name)) name = `${server.name}_${name}`;
        seen.add(name);
        const named = { ...tool, function: { ...tool.function, name } };
        tools.push(named);
        entries.push({ name, description: tool.function.description ?? "" });
      }
      catalog.push({ name: round > 0 ? `${server.name}-${round + 1}` : server.name, tools: entries });
    }
  }
  return { tools, catalog };
}

/** How many tools the catalogue above has before it starts repeating servers. */
export const DISTINCT_TOOLS = SERVERS.reduce((n, server) => n + serverTools(server).length, 0);
