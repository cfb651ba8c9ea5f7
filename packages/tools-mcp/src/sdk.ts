/**
 * The MCP SDK's runtime parts, loaded the first time a server is connected rather than when the
 * package is imported. The SDK (its client, transports and the schema library under them) is the
 * largest part of what importing `@loopwright/tools-mcp` — and so `@loopwright/agent`, which always
 * imports it — would cost a host that never starts a server: a CLI pays that on every start.
 * Everything here that needs a runtime value from the SDK runs after a connect began, which
 * awaited {@link loadSdk}; where an error is only being classified, an SDK never loaded means the
 * error cannot be one of its classes.
 */
import type * as ClientModule from "@modelcontextprotocol/sdk/client/index.js";
import type * as SseModule from "@modelcontextprotocol/sdk/client/sse.js";
import type * as StdioModule from "@modelcontextprotocol/sdk/client/stdio.js";
import type * as StreamableModule from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type * as SharedStdioModule from "@modelcontextprotocol/sdk/shared/stdio.js";
import type * as TypesModule from "@modelcontextprotocol/sdk/types.js";

/** What tools-mcp uses of the SDK at run time. */
export interface McpSdk {
  readonly Client: typeof ClientModule.Client;
  readonly SSEClientTransport: typeof SseModule.SSEClientTransport;
  readonly SseError: typeof SseModule.SseError;
  readonly StdioClientTransport: typeof StdioModule.StdioClientTransport;
  readonly getDefaultEnvironment: typeof StdioModule.getDefaultEnvironment;
  readonly StreamableHTTPClientTransport: typeof StreamableModule.StreamableHTTPClientTransport;
  readonly StreamableHTTPError: typeof StreamableModule.StreamableHTTPError;
  readonly serializeMessage: typeof SharedStdioModule.serializeMessage;
  readonly CallToolResultSchema: typeof TypesModule.CallToolResultSchema;
  readonly ElicitRequestSchema: typeof TypesModule.ElicitRequestSchema;
  readonly ListToolsResultSchema: typeof TypesModule.ListToolsResultSchema;
  readonly ToolListChangedNotificationSchema: typeof TypesModule.ToolListChangedNotificationSchema;
  readonly JSONRPCErrorResponseSchema: typeof TypesModule.JSONRPCErrorResponseSchema;
  readonly JSONRPCNotificationSchema: typeof TypesModule.JSONRPCNotificationSchema;
  readonly JSONRPCRequestSchema: typeof TypesModule.JSONRPCRequestSchema;
  readonly JSONRPCResultResponseSchema: typeof TypesModule.JSONRPCResultResponseSchema;
  readonly ErrorCode: typeof TypesModule.ErrorCode;
  readonly McpError: typeof TypesModule.McpError;
}

let loaded: McpSdk | undefined;
let loading: Promise<McpSdk> | undefined;

/** Loads the SDK once; later calls share the one load. A failed load is tried again next time. */
export function loadSdk(): Promise<McpSdk> {
  if (loaded) return Promise.resolve(loaded);
  loading ??= Promise.all([
    import("@modelcontextprotocol/sdk/client/index.js"),
    import("@modelcontextprotocol/sdk/client/sse.js"),
    import("@modelcontextprotocol/sdk/client/stdio.js"),
    import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
    import("@modelcontextprotocol/sdk/shared/stdio.js"),
    import("@modelcontextprotocol/sdk/types.js"),
  ]).then(
    ([client, sse, stdio, streamable, sharedStdio, types]) => {
      loaded = {
        Client: client.Client,
        SSEClientTransport: sse.SSEClientTransport,
        SseError: sse.SseError,
        StdioClientTransport: stdio.StdioClientTransport,
        getDefaultEnvironment: stdio.getDefaultEnvironment,
        StreamableHTTPClientTransport: streamable.StreamableHTTPClientTransport,
        StreamableHTTPError: streamable.StreamableHTTPError,
        serializeMessage: sharedStdio.serializeMessage,
        CallToolResultSchema: types.CallToolResultSchema,
        ElicitRequestSchema: types.ElicitRequestSchema,
        ListToolsResultSchema: types.ListToolsResultSchema,
        ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
        JSONRPCErrorResponseSchema: types.JSONRPCErrorResponseSchema,
        JSONRPCNotificationSchema: types.JSONRPCNotificationSchema,
        JSONRPCRequestSchema: types.JSONRPCRequestSchema,
        JSONRPCResultResponseSchema: types.JSONRPCResultResponseSchema,
        ErrorCode: types.ErrorCode,
        McpError: types.McpError,
      };
      return loaded;
    },
    (error: unknown) => {
      loading = undefined;
      throw error;
    },
  );
  return loading;
}

/** The SDK if it has been loaded, else undefined. */
export function loadedSdk(): McpSdk | undefined {
  return loaded;
}

/** The loaded SDK; for code that runs only after a connect awaited {@link loadSdk}. */
export function sdk(): McpSdk {
  if (!loaded)
    throw new Error("@loopwright/tools-mcp: the MCP SDK is used before it was loaded (an internal error).");
  return loaded;
}

/** Whether `error` is the SDK's `McpError` (never, while the SDK is not loaded). */
export function isMcpError(error: unknown): error is TypesModule.McpError {
  return loaded !== undefined && error instanceof loaded.McpError;
}

/**
 * The HTTP status an SDK transport error kept apart (Streamable HTTP's or SSE's), or undefined.
 */
export function transportStatus(error: unknown): number | undefined {
  if (loaded === undefined) return undefined;
  return error instanceof loaded.StreamableHTTPError || error instanceof loaded.SseError
    ? error.code
    : undefined;
}
