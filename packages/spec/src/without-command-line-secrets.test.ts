// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are shell commands and spec placeholders, where ${…} is meant literally.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { withoutArgSecrets } from "./find-spec-secrets.js";
import { withoutCommandLineSecrets } from "./index.js";

const HIDDEN = "<hidden>";
const hide = () => HIDDEN;

describe("withoutCommandLineSecrets hides each value the command-line reader finds where it is written", () => {
  it.each([
    // The r41 repro: a shell's command with a literal token, a heredoc and a reference.
    [
      "export GITHUB_TOKEN=tok3n-in-script; cat <<EOF > ~/.cfg\nuser: me\nEOF\nexec srv --token ${GITHUB_TOKEN}",
      "export GITHUB_TOKEN=${GITHUB_TOKEN}; cat <<EOF > ~/.cfg\nuser: me\nEOF\nexec srv --token ${GITHUB_TOKEN}",
    ],
    ["GITHUB_TOKEN=abc123xyz node srv", "GITHUB_TOKEN=${GITHUB_TOKEN} node srv"],
    [
      "exec srv --api-key 'q8Zr3vT0kLm9' | tee log # token",
      "exec srv --api-key '${API_KEY}' | tee log # token",
    ],
    ["curl -u admin:S3cretPass https://me:pw@host/p", "curl -u admin:${PASSWORD} https://host/p"],
    ["exec srv --conn 'Server=db;Password=hunter2x;'", "exec srv --conn 'Server=db;Password=${PASSWORD};'"],
    ["exec srv --password ${DB_PASSWORD:-hunter2x}", "exec srv --password ${DB_PASSWORD:-${PASSWORD}}"],
    // A value read at run time is no secret.
    ['exec srv --token "$TOKEN" --api-key $(get-key)', 'exec srv --token "$TOKEN" --api-key $(get-key)'],
    // A heredoc's body is read as command words: a flag in it is found, inside `$(…)` too ...
    ["x=$(cat <<EOF\n--token abc123def\nEOF\n)", "x=$(cat <<EOF\n--token ${TOKEN}\nEOF\n)"],
    // ... but what a body says in its own language is not seen, and is left as written.
    ["cat <<EOF > c.yml\npassword: hunter2\nEOF", "cat <<EOF > c.yml\npassword: hunter2\nEOF"],
    [
      'cat <<EOF > c.json\n{"password": "hunter2x9"}\nEOF',
      'cat <<EOF > c.json\n{"password": "hunter2x9"}\nEOF',
    ],
  ])("%j", (line, shown) => {
    expect(withoutCommandLineSecrets(line)).toBe(shown);
  });

  it("uses what hide returns, given the secret and its name", () => {
    const seen: [string, string | undefined][] = [];
    const out = withoutCommandLineSecrets("A_TOKEN=s3cretvalue9 srv --api-key=k3yvalue88", (secret, name) => {
      seen.push([secret, name]);
      return `<${name}>`;
    });
    expect(out).toBe("A_TOKEN=<A_TOKEN> srv --api-key=<api-key>");
    expect(seen).toEqual([
      ["s3cretvalue9", "A_TOKEN"],
      ["k3yvalue88", "api-key"],
    ]);
  });

  it("never replaces a script whole, as withoutArgSecrets does for a shell's own command", () => {
    const script = "cat <<EOF > ~/.cfg\nkey: none\nEOF\nexec srv --token s3cr3tvalue --port 80";
    expect(withoutArgSecrets(["-c", script], hide)).toEqual(["-c", HIDDEN]);
    expect(withoutCommandLineSecrets(script, hide)).toBe(
      "cat <<EOF > ~/.cfg\nkey: none\nEOF\nexec srv --token <hidden> --port 80",
    );
    // Nothing found: the line as it is, a telling word and all.
    expect(withoutCommandLineSecrets("exec srv # token  here", hide)).toBe("exec srv # token  here");
  });

  it("never throws: a non-string is returned as it is", () => {
    expect(withoutCommandLineSecrets(undefined as unknown as string)).toBeUndefined();
    expect(withoutCommandLineSecrets(42 as unknown as string)).toBe(42);
  });

  it("takes out every generated secret the reader finds and keeps every other character (property)", () => {
    // Ordinary words: lowercase, no telling fragment, never a key shape.
    const word = fc
      .stringMatching(/^[a-z][a-z0-9./]{0,7}$/)
      .filter((w) => !/pass|pwd|secret|token|key|auth|bearer|cred|priv|login|sess|cookie|sig/.test(w));
    const secret = fc
      .stringMatching(/^[A-Za-z0-9_.-]{8,24}$/)
      .filter((s) => /\d/.test(s) && /[A-Za-z]/.test(s) && !s.startsWith("-"));
    const quote = fc.constantFrom("", "'", '"');
    // Where a secret is given: a telling flag (either form) or a telling assignment.
    const telling = fc.constantFrom(
      "--token ",
      "--api-key ",
      "--password=",
      "--client-secret ",
      "GITHUB_TOKEN=",
      "export DB_PASSWORD=",
      "-e OPENAI_API_KEY=",
    );
    const part = fc.oneof(
      fc.array(word, { minLength: 1, maxLength: 3 }).map((words) => ({ text: words.join(" ") })),
      fc.tuple(telling, quote, secret).map(([lead, q, value]) => ({ lead: `${lead}${q}`, value, tail: q })),
      // A heredoc: its operator, quoted delimiter and body lines kept as written.
      fc
        .array(fc.array(word, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 3 })
        .map((lines) => ({ text: `cat <<'EOF' > out\n${lines.map((l) => l.join(" ")).join("\n")}\nEOF\n` })),
    );
    const separator = fc.constantFrom(" ", "  ", " ; ", " | ", " && ", "\n", " \\\n  ");
    fc.assert(
      fc.property(
        fc.array(fc.tuple(word, part), { minLength: 1, maxLength: 5 }),
        fc.array(separator, { minLength: 5, maxLength: 5 }),
        (parts, separators) => {
          let line = "";
          let shown = "";
          const secrets: string[] = [];
          parts.forEach(([command, p], index) => {
            const glue = index === 0 ? "" : (separators[index] as string);
            const head = `${glue}${command} `;
            line += head;
            shown += head;
            if ("text" in p) {
              line += p.text;
              shown += p.text;
            } else {
              line += p.lead + p.value + p.tail;
              shown += p.lead + HIDDEN + p.tail;
              secrets.push(p.value);
            }
          });
          expect(withoutCommandLineSecrets(line, hide)).toBe(shown);
          const plain = withoutCommandLineSecrets(line);
          for (const value of secrets) expect(plain).not.toContain(value);
        },
      ),
    );
  });
});

// fix138 #3: a pasted line that is one connection string was shown read as a command line, so a
// `;` inside a braced value or a space in a value ended it early and showed the rest; the export
// read it as a connection string and hid the whole value.
describe("withoutCommandLineSecrets: a pasted connection string's telling value is hidden whole (fix138)", () => {
  it.each([
    ["Server=db;Pwd={a;b S3cret99x};Database=app", "Server=db;Pwd=<hidden>;Database=app"],
    ["Server=db;Password=Xy7pQ2 two;Database=app", "Server=db;Password=<hidden>;Database=app"],
    ["Server=db;Password=X two;", "Server=db;Password=<hidden>;"],
    [
      "jdbc:sqlserver://db:1433;user=sa;password={x;y z9};",
      "jdbc:sqlserver://db:1433;user=sa;password=<hidden>;",
    ],
  ])("%j shows %j", (line, shown) => {
    expect(withoutCommandLineSecrets(line, hide)).toBe(shown);
    const plain = withoutCommandLineSecrets(line);
    for (const part of ["S3cret99x", "two", "y z9"])
      if (!shown.includes(part)) expect(plain).not.toContain(part);
  });

  it("shows a command line holding a connection string word as before", () => {
    expect(withoutCommandLineSecrets("srv --conn 'Server=db;Password=X two;Database=app'", hide)).toBe(
      "srv --conn 'Server=db;Password=<hidden>;Database=app'",
    );
    expect(withoutCommandLineSecrets("A=1; srv --token Hunter2pw", hide)).toBe("A=1; srv --token <hidden>");
  });
});
