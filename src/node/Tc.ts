import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/**
 * Linux traffic control as the node agent uses it ([D103]): the one module that knows `tc` and
 * `ip`. A shaped device gets an HTB root qdisc (`1:`, `default 0`: unclassified traffic passes
 * unshaped) on its egress, and its ingress is redirected (ingress qdisc + `mirred`) to an IFB
 * device with the same HTB root; a shaped peer is one class `1:<id>` on each, with a u32 filter
 * per address on the destination (egress: to the device) and on the source (IFB: from it).
 * Each class's filters sit at their own priorities (`2·id` for IPv4, `2·id+1` for IPv6), so
 * they are removed by priority. Only HTB, u32, ingress, ifb and mirred are used: flower, police
 * and fq_codel are missing from some kernels (ours among them).
 */
export class TcFailed extends Data.TaggedError("TcFailed")<{ readonly command: string; readonly message: string }> {}

/** Runs one command (no shell) and answers its standard output. */
export type CommandRunner = (argv: ReadonlyArray<string>) => Effect.Effect<string, TcFailed>

export class Commands extends Context.Tag("node/Commands")<Commands, CommandRunner>() {
  /** the real programs on PATH */
  static readonly Live = Layer.succeed(Commands, (argv) => spawn(argv))
}

/** OpenVPN runs its scripts with no PATH: `tc` and `ip` are then looked for where systems keep them */
const SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

const spawn = (argv: ReadonlyArray<string>): Effect.Effect<string, TcFailed> =>
  Effect.tryPromise({
    try: async () => {
      const [program = "", ...rest] = argv
      const exe = Bun.which(program) ?? Bun.which(program, { PATH: SYSTEM_PATH }) ?? program
      const child = Bun.spawn([exe, ...rest], { stdout: "pipe", stderr: "pipe", stdin: "ignore" })
      const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
      return { stdout, stderr, code }
    },
    catch: (e) => new TcFailed({ command: argv.join(" "), message: e instanceof Error ? e.message : String(e) })
  }).pipe(
    Effect.flatMap(({ code, stderr, stdout }) =>
      code === 0 ? Effect.succeed(stdout) : Effect.fail(new TcFailed({ command: argv.join(" "), message: stderr.trim() || `exit code ${code}` }))
    )
  )

/** the most classes a device holds (each takes two filter priorities of 65535) */
export const MAX_CLASS_ID = 32_767

/** the IFB device a device's ingress is redirected to (Linux names: at most 15 characters) */
export const ifbOf = (dev: string): string => `ifb${dev}`.slice(0, 15)

/** `1:<id in hex>`, as tc reads class ids */
export const classIdOf = (id: number): string => `1:${id.toString(16)}`

/** an address tc may be given: IPv4 or IPv6, with a prefix length */
const ADDRESS = /^(?:\d{1,3}(?:\.\d{1,3}){3}\/\d{1,2}|[0-9A-Fa-f:.]+\/\d{1,3})$/
export const isShapeableAddress = (cidr: string): boolean => ADDRESS.test(cidr)

interface Step {
  readonly argv: ReadonlyArray<string>
  /** a step that makes sure something is absent: "there was nothing to remove" is fine */
  readonly mayFail: boolean
}
const must = (...argv: ReadonlyArray<string>): Step => ({ argv, mayFail: false })
const tryTo = (...argv: ReadonlyArray<string>): Step => ({ argv, mayFail: true })

/** Whatever shaping the device had is replaced by an empty HTB root on it and on its IFB. */
export const resetSteps = (dev: string): ReadonlyArray<Step> => {
  const ifb = ifbOf(dev)
  return [
    tryTo("tc", "qdisc", "del", "dev", dev, "root"),
    tryTo("tc", "qdisc", "del", "dev", dev, "ingress"),
    tryTo("ip", "link", "add", ifb, "type", "ifb"),
    must("ip", "link", "set", ifb, "up"),
    tryTo("tc", "qdisc", "del", "dev", ifb, "root"),
    must("tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "0"),
    must("tc", "qdisc", "add", "dev", ifb, "root", "handle", "1:", "htb", "default", "0"),
    must("tc", "qdisc", "add", "dev", dev, "handle", "ffff:", "ingress"),
    must(
      "tc",
      "filter",
      "add",
      "dev",
      dev,
      "parent",
      "ffff:",
      "protocol",
      "all",
      "prio",
      "1",
      "u32",
      "match",
      "u32",
      "0",
      "0",
      "action",
      "mirred",
      "egress",
      "redirect",
      "dev",
      ifb
    )
  ]
}

const sides = (dev: string) =>
  [
    { on: dev, match: "dst" },
    { on: ifbOf(dev), match: "src" }
  ] as const

const rateSteps = (on: string, id: number, mbps: number): Step =>
  must("tc", "class", "replace", "dev", on, "parent", "1:", "classid", classIdOf(id), "htb", "rate", `${mbps}mbit`, "ceil", `${mbps}mbit`)

const unfilterSteps = (on: string, id: number): ReadonlyArray<Step> => [
  tryTo("tc", "filter", "del", "dev", on, "parent", "1:", "prio", String(2 * id)),
  tryTo("tc", "filter", "del", "dev", on, "parent", "1:", "prio", String(2 * id + 1))
]

/** A class of `mbps` both ways for these addresses (its filters made again). */
export const classSteps = (dev: string, id: number, mbps: number, addresses: ReadonlyArray<string>): ReadonlyArray<Step> =>
  sides(dev).flatMap(({ match, on }) => [
    rateSteps(on, id, mbps),
    ...unfilterSteps(on, id),
    ...addresses
      .filter(isShapeableAddress)
      .map((cidr) =>
        cidr.includes(":")
          ? must(
              "tc",
              "filter",
              "add",
              "dev",
              on,
              "parent",
              "1:",
              "protocol",
              "ipv6",
              "prio",
              String(2 * id + 1),
              "u32",
              "match",
              "ip6",
              match,
              cidr,
              "flowid",
              classIdOf(id)
            )
          : must(
              "tc",
              "filter",
              "add",
              "dev",
              on,
              "parent",
              "1:",
              "protocol",
              "ip",
              "prio",
              String(2 * id),
              "u32",
              "match",
              "ip",
              match,
              cidr,
              "flowid",
              classIdOf(id)
            )
      )
  ])

/** Only the rate of a class changes (its filters stay). */
export const rateOnlySteps = (dev: string, id: number, mbps: number): ReadonlyArray<Step> => sides(dev).map(({ on }) => rateSteps(on, id, mbps))

/** A class and its filters gone from both sides (absent already: fine). */
export const removeSteps = (dev: string, id: number): ReadonlyArray<Step> =>
  sides(dev).flatMap(({ on }) => [...unfilterSteps(on, id), tryTo("tc", "class", "del", "dev", on, "classid", classIdOf(id))])

const runSteps = (run: CommandRunner, steps: ReadonlyArray<Step>) =>
  Effect.forEach(steps, (step) => (step.mayFail ? Effect.ignore(run(step.argv)) : Effect.asVoid(run(step.argv))), { discard: true })

export interface TcShape {
  /** [D103]: on start, whatever shaping the device had is replaced by empty HTB roots */
  readonly reset: (dev: string) => Effect.Effect<void, TcFailed>
  /** the roots made only when they are not there (OpenVPN's scripts run once per session) */
  readonly ensure: (dev: string) => Effect.Effect<void, TcFailed>
  readonly setClass: (dev: string, id: number, mbps: number, addresses: ReadonlyArray<string>) => Effect.Effect<void, TcFailed>
  readonly setRate: (dev: string, id: number, mbps: number) => Effect.Effect<void, TcFailed>
  readonly removeClass: (dev: string, id: number) => Effect.Effect<void, TcFailed>
}

export class Tc extends Context.Tag("node/Tc")<Tc, TcShape>() {
  static readonly layer = Layer.effect(
    Tc,
    Effect.map(Commands, (run) => make(run))
  )
  static readonly Live = Tc.layer.pipe(Layer.provide(Commands.Live))
}

export const make = (run: CommandRunner): TcShape => ({
  reset: (dev) => runSteps(run, resetSteps(dev)),
  ensure: (dev) =>
    Effect.flatMap(
      Effect.all([run(["tc", "qdisc", "show", "dev", dev]), Effect.orElseSucceed(run(["tc", "qdisc", "show", "dev", ifbOf(dev)]), () => "")]),
      ([own, ifb]) =>
        /qdisc htb 1: root/.test(own) && /qdisc ingress ffff:/.test(own) && /qdisc htb 1: root/.test(ifb) ? Effect.void : runSteps(run, resetSteps(dev))
    ),
  setClass: (dev, id, mbps, addresses) => runSteps(run, classSteps(dev, id, mbps, addresses)),
  setRate: (dev, id, mbps) => runSteps(run, rateOnlySteps(dev, id, mbps)),
  removeClass: (dev, id) => runSteps(run, removeSteps(dev, id))
})
