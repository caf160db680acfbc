import type * as SqlClient from "@effect/sql/SqlClient"
import type * as Effect from "effect/Effect"
import init from "./0001_init.ts"
import catalogNotify from "./0002_catalog_notify.ts"
import vpnAccessHolds from "./0003_vpn_access_holds.ts"
import moneyRules from "./0004_money_rules.ts"
import usageExactlyOnce from "./0005_usage_exactly_once.ts"
import twoFactor from "./0006_two_factor.ts"
import devices from "./0007_devices.ts"
import nodeSync from "./0008_node_sync.ts"
import outbox from "./0009_outbox.ts"
import apiKeysSessions from "./0011_api_keys_sessions.ts"
import auditLog from "./0012_audit_log.ts"
import scaleIndexes from "./0013_scale_indexes.ts"
import webhooks from "./0014_webhooks.ts"
import quotaPeriods from "./0015_quota_periods.ts"
import accountTakeoverLimits from "./0016_account_takeover_limits.ts"
import planQuotaAction from "./0020_plan_quota_action.ts"
import nodePush from "./0022_node_push.ts"
import deviceActivity from "./0023_device_activity.ts"
import balance from "./0030_balance.ts"
import creditNotes from "./0031_credit_notes.ts"
import serviceCancelAndChanges from "./0032_service_cancel_and_changes.ts"
import changeInvoices from "./0033_change_invoices.ts"
import stripeGateway from "./0034_stripe_gateway.ts"
import invoicesPaidByService from "./0035_invoices_paid_by_service.ts"
import usageLogPerStatement from "./0040_usage_log_per_statement.ts"
import deviceUsagePerStatement from "./0045_device_usage_per_statement.ts"
import reportTablesFillfactor from "./0046_report_tables_fillfactor.ts"
import servicesCurrentCovering from "./0047_services_current_covering.ts"
import moneyReview from "./0048_money_review.ts"
import nodeChangesScoped from "./0050_node_changes_scoped.ts"
import handshakesNotAhead from "./0051_handshakes_not_ahead.ts"
import userLocale from "./0054_user_locale.ts"
import subscriptionLinks from "./0057_subscription_links.ts"
import telegram from "./0059_telegram.ts"
import gatewaysAndDunning from "./0061_gateways_and_dunning.ts"

/**
 * Every migration, imported statically so that a compiled binary carries them.
 * Keys are `<id>_<name>`; ids only grow (an id at or below the newest applied one is skipped).
 */
export const migrations: Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> = {
  "1_init": init,
  "2_catalog_notify": catalogNotify,
  "3_vpn_access_holds": vpnAccessHolds,
  "4_money_rules": moneyRules,
  "5_usage_exactly_once": usageExactlyOnce,
  "6_two_factor": twoFactor,
  "7_devices": devices,
  "8_node_sync": nodeSync,
  "9_outbox": outbox,
  "11_api_keys_sessions": apiKeysSessions,
  "12_audit_log": auditLog,
  "13_scale_indexes": scaleIndexes,
  "14_webhooks": webhooks,
  "15_quota_periods": quotaPeriods,
  "16_account_takeover_limits": accountTakeoverLimits,
  "20_plan_quota_action": planQuotaAction,
  "22_node_push": nodePush,
  "23_device_activity": deviceActivity,
  "30_balance": balance,
  "31_credit_notes": creditNotes,
  "32_service_cancel_and_changes": serviceCancelAndChanges,
  "33_change_invoices": changeInvoices,
  "34_stripe_gateway": stripeGateway,
  "35_invoices_paid_by_service": invoicesPaidByService,
  "40_usage_log_per_statement": usageLogPerStatement,
  "45_device_usage_per_statement": deviceUsagePerStatement,
  "46_report_tables_fillfactor": reportTablesFillfactor,
  "47_services_current_covering": servicesCurrentCovering,
  "48_money_review": moneyReview,
  "50_node_changes_scoped": nodeChangesScoped,
  "51_handshakes_not_ahead": handshakesNotAhead,
  "54_user_locale": userLocale,
  "57_subscription_links": subscriptionLinks,
  "59_telegram": telegram,
  "61_gateways_and_dunning": gatewaysAndDunning
}
