import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Layer from "effect/Layer"
import { Accounts } from "./accounts/Accounts.ts"
import { ApiKeys } from "./accounts/ApiKeys.ts"
import { BearerTokensLive } from "./accounts/Auth.ts"
import { RecipientsLive } from "./accounts/Contacts.ts"
import { Tokens } from "./accounts/Tokens.ts"
import { TwoFactor } from "./accounts/TwoFactor.ts"
import { Api } from "./Api.ts"
import { AuditLog } from "./audit/AuditLog.ts"
import { AuditHttpLive } from "./audit/Http.ts"
import { AdminAuthenticationLive, AuthenticationLive, PeopleOnlyLive } from "./http/Auth.ts"
import { MetricsAccessLive } from "./http/MetricsAccess.ts"
import { RateLimitsLive } from "./http/RateLimit.ts"
import { AppClock } from "./platform/Clock.ts"
import { AppKey } from "./platform/Crypto.ts"
import { KeyGen } from "./platform/KeyGen.ts"
import { Mailer } from "./platform/Mailer.ts"
import { Metrics } from "./platform/Metrics.ts"
import { RateLimiter } from "./platform/RateLimiter.ts"
import { AccountsHttpLive } from "./accounts/Http.ts"
import { TelegramHttpLive } from "./accounts/telegram/Http.ts"
import { BillingHttpLive } from "./billing/Http.ts"
import { BalanceHttpLive } from "./billing/balance/Http.ts"
import { PaymentMethodsHttpLive } from "./billing/cards/Http.ts"
import { RefundsHttpLive } from "./billing/refunds/Http.ts"
import { SubscriptionsHttpLive } from "./billing/subscriptions/Http.ts"
import { PromoUsesLive } from "./billing/PromoUses.ts"
import { ServicesHttpLive } from "./services/Http.ts"
import { CatalogHttpLive } from "./catalog/Http.ts"
import { Faq } from "./support/Faq.ts"
import { JobMetricsLive } from "./jobs/JobMetrics.ts"
import { SupportHttpLive } from "./support/Http.ts"
import { SupportConsoleHttpLive } from "./support/console/Http.ts"
import { BillingConsoleHttpLive } from "./billing/console/Http.ts"
import { Tickets } from "./support/Tickets.ts"
import { MetricsLive, SystemLive } from "./system/Http.ts"
import { OutboxHttpLive } from "./outbox/Http.ts"
import { OutboxAdmin } from "./outbox/Admin.ts"
import { Outbox } from "./outbox/Outbox.ts"
import { VpnHttpLive, VpnServicesLive } from "./vpn/Http.ts"
import { VpnAccessControlLive } from "./vpn/VpnAccounts.ts"
import { WebhooksHttpLive } from "./webhooks/Http.ts"
import { WebhookDeliveries } from "./webhooks/Deliveries.ts"
import { WebhookEndpoints } from "./webhooks/Endpoints.ts"
import { DomainEventsLive } from "./webhooks/Webhooks.ts"

/** Every group's handlers and the endpoints' middleware (auth, rate limits), over the services; `Server.ts` adds the API-wide layers. */
export const ApiLive = HttpApiBuilder.api(Api).pipe(
  Layer.provide([
    SystemLive,
    MetricsLive,
    AccountsHttpLive,
    TelegramHttpLive,
    CatalogHttpLive,
    ServicesHttpLive,
    BillingHttpLive,
    BalanceHttpLive,
    PaymentMethodsHttpLive,
    RefundsHttpLive,
    SubscriptionsHttpLive,
    VpnHttpLive,
    SupportHttpLive,
    AuditHttpLive,
    OutboxHttpLive,
    WebhooksHttpLive,
    BillingConsoleHttpLive,
    SupportConsoleHttpLive
  ]),
  Layer.provide([AuthenticationLive, AdminAuthenticationLive, PeopleOnlyLive, RateLimitsLive, MetricsAccessLive])
)

/**
 * The ports lower rooms declare, as the higher rooms provide them: `Recipients` (outbox, from
 * accounts), `VpnAccessControl` (accounts, from vpn), `DomainEvents` (events, from webhooks);
 * `PromoUses` (catalog, from billing) is provided beside the services it reads.
 */
export const PortsLive = Layer.mergeAll(RecipientsLive, VpnAccessControlLive, DomainEventsLive)

/**
 * The product's services on top of the platform (config, database, clock, mailer, keys). `swap`
 * (tests): `Test` layers that replace ports or services, both for the services built here and for
 * the handlers.
 */
export const makeDomainLive = (swap: Layer.Layer<never> = Layer.empty) =>
  Layer.mergeAll(
    BearerTokensLive.pipe(Layer.provideMerge(Layer.merge(Tokens.Default, ApiKeys.Default))),
    AuditLog.Default,
    Accounts.Default,
    TwoFactor.Default,
    Tickets.Default,
    Outbox.Default,
    OutboxAdmin.Default,
    WebhookEndpoints.Default,
    WebhookDeliveries.Default,
    Faq.Default,
    RateLimiter.Live,
    PromoUsesLive,
    VpnServicesLive,
    JobMetricsLive
  ).pipe(Layer.provideMerge(Layer.merge(PortsLive, swap)), (domain) => Layer.merge(domain, swap))

export const DomainLive = makeDomainLive()

/** The platform edges that tests replace: clock, mailer, key generation; the metrics on the clock. */
export const EdgesLive = Layer.mergeAll(AppClock.Live, Mailer.Live, KeyGen.Live, AppKey.Live, Metrics.Live.pipe(Layer.provide(AppClock.Live)))
