// One credential, two redactors. @loopwright/client masks an endpoint's key, headers and URL
// credentials in what a server sends back; this package masks an MCP server's in what is reported
// about it and in its results. The two cannot share code (this package would pull the openai peer
// in, see the README), so these properties hold them to one rule: where a server writes the same
// secret back in the same form, both mask it, and a name or scheme word one package takes for a
// credential's, the other does too. spec's `looksSecretName` is the name rule this package copies.
import { isCredentialParam, redactor } from "@loopwright/client";
import { looksSecretName, withoutArgSecrets } from "@loopwright/spec";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { ENCODINGS } from "../test/encodings.js";
import type { McpServerConfig } from "./config.js";
import { masker, resultSecretsOf, secretsOf } from "./redact.js";

/** Printable ASCII without a space (client trims) and without `*` (the mask itself). */
const secretChar = fc.constantFrom(
  ..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+=:@!$%&'\"(),;<>?[]\\^`{|}~#",
);
const secret = fc.string({ unit: secretChar, minLength: 8, maxLength: 40 });
const hexSecret = fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: 16, maxLength: 40 });

const base64At = (value: string, offset: number, urlSafe: boolean) =>
  Buffer.concat([Buffer.alloc(offset, 0xff), Buffer.from(value)]).toString(urlSafe ? "base64url" : "base64");

/** A secret as servers and libraries write it back: the masking tests' encodings, and base64. */
const FORMS: Record<string, (value: string) => string> = {
  ...ENCODINGS,
  "base64 (after a 3-byte neighbour)": (v) => base64At(v, 3, false).slice(4),
  "base64url (after a 3-byte neighbour)": (v) => base64At(v, 3, true).slice(4),
};

/** Authorization scheme words either package knows, as servers spell them. */
const SCHEMES = [
  "Bearer",
  "Basic",
  "Token",
  "Bot",
  "ApiKey",
  "Api-Key",
  "Key",
  "Digest",
  "DPoP",
  "MAC",
  "HMAC",
];

/** One secret given to both: as the endpoint's and the MCP server's config hold it. */
interface Place {
  name: string;
  endpoint: (s: string) => Parameters<typeof redactor>[0];
  server: (s: string) => McpServerConfig;
}
const HTTP = { name: "remote", type: "http" as const };
const PLACES: Place[] = [
  ...SCHEMES.map((scheme) => ({
    name: `an Authorization header (${scheme})`,
    endpoint: (s: string) => ({ headers: { Authorization: `${scheme} ${s}` } }),
    server: (s: string): McpServerConfig => ({
      ...HTTP,
      url: "http://127.0.0.1:9/mcp",
      headers: { Authorization: `${scheme} ${s}` },
    }),
  })),
  {
    name: "an x-api-key header",
    endpoint: (s) => ({ headers: { "x-api-key": s } }),
    server: (s) => ({ ...HTTP, url: "http://127.0.0.1:9/mcp", headers: { "x-api-key": s } }),
  },
  {
    name: "a URL's password",
    endpoint: (s) => ({ baseUrl: `http://user:${encodeURIComponent(s)}@127.0.0.1:9/v1` }),
    server: (s) => ({ ...HTTP, url: `http://user:${encodeURIComponent(s)}@127.0.0.1:9/mcp` }),
  },
];

/** Query parameter names either package takes for a credential's (client's list and spec's pattern). */
const PARAMS =
  "api_key apiKey key token access_token auth secret client_secret password pass sig signature code session jwt subscription-key private_token x-goog-api-key refresh_token passwd db_pass SMTP-PASS dbPass gpg_passphrase".split(
    " ",
  );

function maskedByBoth(place: Pick<Place, "endpoint" | "server">, value: string, written: string) {
  const text = `echo ${written} end`;
  const byClient = redactor(place.endpoint(value))(text);
  const bySecrets = masker(secretsOf(place.server(value)))(text);
  const byResults = masker(resultSecretsOf(place.server(value)))(text);
  return { byClient, bySecrets, byResults };
}

describe("client and tools-mcp mask the same secret", () => {
  for (const place of PLACES) {
    for (const [form, encode] of Object.entries(FORMS)) {
      it(`given in ${place.name}, written ${form}`, () => {
        fc.assert(
          fc.property(secret, (value) => {
            const written = encode(value);
            const { byClient, bySecrets, byResults } = maskedByBoth(place, value, written);
            expect(byClient).not.toContain(written);
            expect(bySecrets).not.toContain(written);
            expect(byResults).not.toContain(written);
          }),
          propertyRuns(40),
        );
      });
    }
  }

  it("written percent-encoded after a stray % and a hex digit (the decoded reading takes %0a first)", () => {
    const place = PLACES.find((p) => p.name === "an x-api-key header") as Place;
    const value = "abcdefabcdefabcdef(a)'b!c*";
    for (const form of Object.keys(ENCODINGS).filter((name) => /encoded/.test(name))) {
      const written = (ENCODINGS[form] as (v: string) => string)(value);
      const text = `%0${written} end`;
      expect(redactor(place.endpoint(value))(text), form).not.toContain(written);
      expect(masker(secretsOf(place.server(value)))(text), form).toBe("%0*** end");
    }
  });

  it("a hex key written in capitals", () => {
    const place = PLACES.find((p) => p.name === "an x-api-key header") as Place;
    fc.assert(
      fc.property(hexSecret, (value) => {
        const written = value.toUpperCase();
        fc.pre(written !== value);
        const { byClient, bySecrets, byResults } = maskedByBoth(place, value, written);
        expect(byClient).not.toContain(written);
        expect(bySecrets).not.toContain(written);
        expect(byResults).not.toContain(written);
      }),
    );
  });

  it("a URL query value under any credential name either package knows", () => {
    for (const name of PARAMS) {
      fc.assert(
        fc.property(secret, (value) => {
          const url = `https://api.example/v1?${name}=${encodeURIComponent(value)}`;
          // client: the endpoint's base URL; tools-mcp: a URL in a stdio server's env and args.
          const place = {
            endpoint: () => ({ baseUrl: url }),
            server: (): McpServerConfig => ({
              name: "local",
              type: "stdio",
              command: "node",
              args: ["server.js", url],
              env: { SERVICE_URL: url },
            }),
          };
          const { byClient, bySecrets, byResults } = maskedByBoth(place, value, value);
          expect(byClient, name).not.toContain(value);
          expect(bySecrets, name).not.toContain(value);
          expect(byResults, name).not.toContain(value);
        }),
        propertyRuns(10),
      );
    }
  });
});

describe("client and tools-mcp read names and scheme words alike", () => {
  it("a scheme word alone is not taken for the secret, by either", () => {
    for (const scheme of SCHEMES) {
      const value = "tok-9f8e7d6c5b4a";
      const text = `${scheme} expired`;
      const server: McpServerConfig = {
        ...HTTP,
        url: "http://127.0.0.1:9/mcp",
        headers: { Authorization: `${scheme} ${value}` },
      };
      expect(redactor({ headers: { Authorization: `${scheme} ${value}` } })(text), scheme).toBe(text);
      expect(masker(secretsOf(server))(text), scheme).toBe(text);
    }
  });

  /** True when tools-mcp takes the value after `--<flag>` in a stdio server's args for a credential. */
  const flagTakesCredential = (flag: string): boolean => {
    const value = "flag-value-8c7b6a5f";
    const server: McpServerConfig = { name: "x", type: "stdio", command: "node", args: [`--${flag}`, value] };
    return secretsOf(server).includes(value);
  };

  it("a flag takes a credential in tools-mcp exactly where spec's looksSecretName says its name is telling", () => {
    const name = fc.string({
      unit: fc.constantFrom(..."abcdefghijklmnopqrstuvwxyzAPIKEYTOKN_-"),
      minLength: 1,
      maxLength: 16,
    });
    fc.assert(
      fc.property(name, (flag) => {
        fc.pre(/^[A-Za-z]/.test(flag));
        expect(flagTakesCredential(flag), flag).toBe(looksSecretName(`--${flag}`));
      }),
    );
  });

  it("`pw` as a word of its own is telling to spec, tools-mcp and client alike; `pwsh` is not (the property's PwKa)", () => {
    for (const flag of ["pw", "PwKa", "db-pw", "dbPw", "pwsh", "npw"]) {
      const telling = !["pwsh", "npw"].includes(flag);
      expect(looksSecretName(`--${flag}`), flag).toBe(telling);
      expect(flagTakesCredential(flag), flag).toBe(telling);
      expect(isCredentialParam(flag), flag).toBe(telling);
    }
  });

  it("`cred`/`creds` as a word of its own (--creds, DB_CREDS, awsCreds) is telling to spec, tools-mcp and client alike; --credits, incredible, CREDIT_LIMIT are not", () => {
    const telling = [
      "creds",
      "cred",
      "db-creds",
      "DB_CREDS",
      "aws_creds",
      "awsCreds",
      "credsFile",
      "CREDS_JSON",
    ];
    const clear = ["credits", "incredible", "scredit", "CREDIT_LIMIT", "sacred", "credo", "accredit"];
    for (const flag of [...telling, ...clear]) {
      const expected = telling.includes(flag);
      expect(looksSecretName(`--${flag}`), flag).toBe(expected);
      expect(flagTakesCredential(flag), flag).toBe(expected);
      expect(isCredentialParam(flag), flag).toBe(expected);
    }
  });

  it("a query name is a credential's in client exactly where tools-mcp masks its value, and wherever spec calls it telling", () => {
    const name = fc.string({
      unit: fc.constantFrom(..."abcdefghijklmnopqrstuvwxyzAPIKEYTOKN_-"),
      minLength: 1,
      maxLength: 14,
    });
    fc.assert(
      fc.property(name, (param) => {
        const value = "value-1a2b3c4d";
        const server: McpServerConfig = {
          name: "x",
          type: "stdio",
          command: "node",
          args: [],
          env: { URL: `https://api.example/?${encodeURIComponent(param)}=${value}` },
        };
        expect(secretsOf(server).includes(value), param).toBe(isCredentialParam(param));
        if (looksSecretName(param)) expect(isCredentialParam(param), param).toBe(true);
      }),
    );
  });

  it("a name built around pass or creds (DB_PASS, dbPass, bypass_cache, passive, DB_CREDS, credits) is a credential's to spec, client and tools-mcp alike", () => {
    // Pieces that put `pass` and `creds` at every kind of edge: a word of its own, inside a longer word (`credits`, `incred`), before a capital.
    const piece = fc.constantFrom(
      "pass",
      "PASS",
      "Pass",
      "cred",
      "creds",
      "CREDS",
      "Creds",
      "its",
      "in",
      "by",
      "com",
      "ive",
      "word",
      "Word",
      "db",
      "DB",
      "x",
    );
    const sep = fc.constantFrom("", "_", "-", ".", "2");
    const name = fc
      .array(fc.tuple(piece, sep), { minLength: 1, maxLength: 4 })
      .map((parts) => parts.map(([p, s]) => p + s).join(""))
      .filter((n) => /^[A-Za-z][\w.-]*$/.test(n));
    fc.assert(
      fc.property(name, (n) => {
        const value = "value-5e6f7a8b";
        const telling = looksSecretName(n);
        const flag: McpServerConfig = { name: "x", type: "stdio", command: "node", args: [`--${n}`, value] };
        const assigned: McpServerConfig = {
          name: "x",
          type: "stdio",
          command: "node",
          args: [`${n}=${value}`],
        };
        const query: McpServerConfig = {
          name: "x",
          type: "stdio",
          command: "node",
          args: [],
          env: { URL: `https://api.example/?${n}=${value}` },
        };
        expect(secretsOf(flag).includes(value), `--${n}`).toBe(telling);
        expect(secretsOf(assigned).includes(value), `${n}=`).toBe(telling);
        expect(secretsOf(query).includes(value), `?${n}=`).toBe(isCredentialParam(n));
        if (telling) expect(isCredentialParam(n), n).toBe(true);
      }),
    );
  });

  it("every query name client calls a credential's is one tools-mcp masks in a URL it is given", () => {
    for (const name of PARAMS.filter((p) => isCredentialParam(p))) {
      const server: McpServerConfig = {
        name: "x",
        type: "stdio",
        command: "node",
        args: [],
        env: { URL: `https://api.example/?${name}=value-1a2b3c4d` },
      };
      expect(secretsOf(server), name).toContain("value-1a2b3c4d");
    }
  });
});

describe("spec and tools-mcp read a server's command line alike", () => {
  /** True when spec's reader of a server's args takes `value` out of `command` and `args`. */
  const specHides = (command: string, args: string[], value: string) =>
    !withoutArgSecrets([command, ...args]).some((arg) => arg.includes(value));
  const mcpMasks = (command: string, args: string[], value: string) =>
    secretsOf({ name: "x", type: "stdio", command, args }).includes(value);

  it("a Windows switch, msbuild's and dotnet's property, a header after a flag's = or as its own word, and sqlcmd's -P: masked exactly where spec hides the value", () => {
    const name = fc.constantFrom(
      "password",
      "Password",
      "pwd",
      "token",
      "ApiKey",
      "X-Api-Key",
      "DbPassword",
      "secret",
      "Configuration",
      "verbosity",
      "user",
      "Accept",
      "Content-Type",
    );
    const value = fc
      .tuple(fc.stringMatching(/^[a-z]{4,10}$/), fc.integer({ min: 1000, max: 99_999 }))
      .map(([word, n]) => `${word}-${n}`);
    const program = fc.constantFrom("sqlcmd", "bcp", "osql", "sqlcmd.exe", "ssh", "scp", "tool");
    const shape = fc.constantFrom(
      "colon",
      "alone",
      "msbuild",
      "dotnet",
      "dash-colon",
      "header=",
      "-H",
      "-P",
      "/P",
    );
    fc.assert(
      fc.property(shape, name, value, program, (form, n, v, client) => {
        // The client matters to -P and /P alone; ssh's words after its host are a remote command,
        // which spec reads as a script.
        const command = form === "-P" || form === "/P" ? client : "tool";
        const args =
          form === "colon"
            ? [`/${n}:${v}`]
            : form === "alone"
              ? [`/${n}`, v]
              : form === "msbuild"
                ? [`/p:${n}=${v}`]
                : form === "dotnet"
                  ? [`-p:${n}=${v}`]
                  : form === "dash-colon"
                    ? [`--${n}:${v}`]
                    : form === "header="
                      ? [`--header=${n}: ${v}`]
                      : form === "-H"
                        ? ["-H", `${n}: ${v}`]
                        : // ssh's and scp's port is -P; a /P would be ssh's host, what follows a remote command.
                          [command === "ssh" || command === "scp" ? "-P" : form, v];
        // Paths around it stay paths: one `/` and a name is a switch, a second `/` never.
        const all =
          command === "ssh" || command === "scp"
            ? args
            : ["/etc/passwd", ...args, "/usr/bin/password-helper"];
        expect(mcpMasks(command, all, v), `${command} ${all.join(" ")}`).toBe(specHides(command, all, v));
        expect(mcpMasks(command, all, "/usr/bin/password-helper")).toBe(false);
      }),
    );
  });

  it("a known client's password flag (mysql -pX, redis-cli -a, mongosh -p, sshpass -p, lftp -u, --token -X): masked exactly where spec hides it", () => {
    const value = fc
      .tuple(fc.stringMatching(/^[a-z]{4,10}$/), fc.integer({ min: 1000, max: 99_999 }))
      .map(([word, n]) => `${word}-${n}`);
    const line = fc.constantFrom(
      (v: string) => ["mysql", "-u", "app", `-p${v}`, "shop"],
      (v: string) => ["mariadb-dump", `-vNp${v}`],
      (v: string) => ["docker", "exec", "db", "mysql", `-p${v}`],
      (v: string) => ["mysql-mcp-server", `-p${v}`],
      (v: string) => ["redis-cli", "-h", "cache", "-a", v, "ping"],
      (v: string) => ["valkey-cli", "-a", v],
      (v: string) => ["tool", "-a", v],
      (v: string) => ["mongosh", "-u", "app", "-p", v],
      (v: string) => ["sshpass", "-p", v, "ssh", "-p", "2222", "host"],
      (v: string) => ["sshpass", `-p${v}`, "ssh", "host"],
      (v: string) => ["sshpass", "-f", v, "ssh", "host"],
      (v: string) => ["lftp", "-u", `app,${v}`, "ftp.example"],
      (v: string) => ["node", "server.js", "--token", `-${v}`],
      // Another program's -p (node's own -p is a script, which spec reads as one).
      (v: string) => ["server", "-p", v],
    );
    fc.assert(
      fc.property(line, value, (build, v) => {
        const [command = "", ...args] = build(v);
        // `--token -X` has the whole word masked, its `-` too.
        const masks = mcpMasks(command, args, v) || mcpMasks(command, args, `-${v}`);
        expect(masks, build(v).join(" ")).toBe(specHides(command, args, v));
        expect(mcpMasks(command, args, "2222")).toBe(false);
      }),
    );
  });
});
