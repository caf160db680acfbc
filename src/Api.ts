import * as HttpApi from "@effect/platform/HttpApi"
import * as OpenApi from "@effect/platform/OpenApi"
import {
  InternalErrorResponse,
  MethodNotAllowedResponse,
  NotFoundResponse,
  PayloadTooLargeResponse,
  ServiceUnavailableResponse,
  TooManyAttemptsResponse,
  ValidationErrorResponse
} from "./http/Errors.ts"
import { API_DESCRIPTION, documentTransform } from "./http/OpenApiDoc.ts"
import { AccountsAdminApi, AccountsApi, AccountsPagesApi } from "./accounts/Api.ts"
import { TelegramApi } from "./accounts/telegram/Api.ts"
import { AuditAdminApi, AuditApi } from "./audit/Api.ts"
import { BillingAdminApi, BillingApi, BillingPagesApi } from "./billing/Api.ts"
import { BalanceAdminApi, BalanceApi } from "./billing/balance/Api.ts"
import { RefundsAdminApi } from "./billing/refunds/Api.ts"
import { SubscriptionsApi } from "./billing/subscriptions/Api.ts"
import { BillingDocumentsApi } from "./billing/documents/Api.ts"
import { BillingGatewaysApi } from "./billing/gateways/Api.ts"
import { PaymentMethodsApi } from "./billing/cards/Api.ts"
import { ServicesAdminApi, ServicesApi } from "./services/Api.ts"
import { CatalogAdminApi, CatalogApi } from "./catalog/Api.ts"
import { SupportAdminApi, SupportApi } from "./support/Api.ts"
import { SupportConsoleApi } from "./support/console/Api.ts"
import { BillingConsoleApi } from "./billing/console/Api.ts"
import { MetricsApi, SystemApi } from "./system/Api.ts"
import { SubscriptionLinkApi, VpnAdminApi, VpnApi } from "./vpn/Api.ts"
import { NodeApi } from "./vpn/NodeApi.ts"
import { OutboxAdminApi } from "./outbox/Api.ts"
import { WebhooksAdminApi } from "./webhooks/Api.ts"

/** The whole API of the spec and DECISIONS, one group per room of the product. */
export class Api extends HttpApi.make("vpn")
  .add(SystemApi)
  .add(AccountsApi)
  .add(AccountsAdminApi)
  .add(TelegramApi)
  .add(CatalogApi)
  .add(CatalogAdminApi)
  .add(ServicesApi)
  .add(ServicesAdminApi)
  .add(BillingApi)
  .add(BillingAdminApi)
  .add(BalanceApi)
  .add(BalanceAdminApi)
  .add(RefundsAdminApi)
  .add(SubscriptionsApi)
  .add(BillingGatewaysApi)
  .add(PaymentMethodsApi)
  .add(BillingDocumentsApi)
  .add(VpnApi)
  .add(NodeApi)
  .add(VpnAdminApi)
  .add(SupportApi)
  .add(SupportAdminApi)
  .add(AuditApi)
  .add(AuditAdminApi)
  .add(OutboxAdminApi)
  .add(WebhooksAdminApi)
  // [D121]: the console's reads
  .add(BillingConsoleApi)
  .add(SupportConsoleApi)
  .addError(ValidationErrorResponse)
  .addError(NotFoundResponse)
  .addError(PayloadTooLargeResponse)
  // the general limit of [D30] and the router's 405 answer on every route
  .addError(TooManyAttemptsResponse)
  .addError(MethodNotAllowedResponse)
  .addError(ServiceUnavailableResponse)
  .addError(InternalErrorResponse)
  .prefix("/v1")
  // the HTML pages of [D26] and the metrics of [D102] live outside /v1 (added after the prefix)
  .add(AccountsPagesApi)
  .add(BillingPagesApi)
  .add(MetricsApi)
  // [D122]: the subscription links, `/s/<token>`
  .add(SubscriptionLinkApi)
  .annotateContext(
    OpenApi.annotations({
      title: "VPN subscription API",
      version: "1.0.0",
      description: API_DESCRIPTION,
      // issue 34: "Try it out" calls the origin the page came from (the page's CSP allows no other)
      servers: [
        { url: "/", description: "This server: the origin `/docs` and this document were fetched from" },
        { url: "http://localhost:3000", description: "A server started with `npm start` on its default port" }
      ],
      license: { name: "Proprietary" },
      transform: documentTransform
    })
  ) {}
