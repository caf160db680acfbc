import { Layer } from "effect"

/** What start-up makes sure of for accounts (the admin of ADMIN_EMAIL/ADMIN_PASSWORD, [D1]). */
export const AccountsStartup = Layer.empty
