/**
 * Ordered schema migrations. Entry N brings the schema from version N to N+1; the applied version is kept in
 * PRAGMA user_version. Never edit an entry that has shipped: append a new one.
 *
 * Times are INTEGER milliseconds since the epoch (UTC), so that cursors compare as numbers and index well.
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
  );

  CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    email         TEXT NOT NULL UNIQUE COLLATE NOCASE,
    name          TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    created_at    INTEGER NOT NULL
  );

  CREATE TABLE organizations (
    id                   TEXT PRIMARY KEY,
    name                 TEXT NOT NULL,
    -- set only on a Personal organization: the account it belongs to
    personal_of          TEXT UNIQUE REFERENCES users(id) ON DELETE CASCADE,
    plan                 TEXT NOT NULL DEFAULT 'hobby',
    cancel_at_period_end INTEGER NOT NULL DEFAULT 0,
    created_at           INTEGER NOT NULL
  );

  CREATE TABLE memberships (
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role            TEXT NOT NULL CHECK (role IN ('admin', 'readwrite', 'readonly')),
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (organization_id, user_id)
  );
  CREATE INDEX memberships_by_user ON memberships(user_id);

  CREATE TABLE invitations (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    email           TEXT NOT NULL COLLATE NOCASE,
    role            TEXT NOT NULL CHECK (role IN ('admin', 'readwrite', 'readonly')),
    status          TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'rejected', 'revoked')),
    invited_by      TEXT REFERENCES users(id) ON DELETE SET NULL,
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    responded_at    INTEGER
  );
  CREATE INDEX invitations_by_org ON invitations(organization_id, status);
  CREATE INDEX invitations_by_email ON invitations(email, status);

  CREATE TABLE api_keys (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    created_by      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name            TEXT NOT NULL,
    secret_hash     TEXT NOT NULL UNIQUE,
    suffix          TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    last_used_at    INTEGER
  );
  CREATE INDEX api_keys_by_org ON api_keys(organization_id, created_at);

  CREATE TABLE sessions (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    created_by      TEXT REFERENCES users(id) ON DELETE SET NULL,
    created_at      INTEGER NOT NULL,
    -- unique per organization so that a createdAt cursor never skips or repeats
    UNIQUE (organization_id, created_at)
  );

  CREATE TABLE device_allocations (
    id              TEXT PRIMARY KEY,
    session_id      TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    status          TEXT NOT NULL,
    platform        TEXT NOT NULL,
    type            TEXT,
    name            TEXT NOT NULL DEFAULT '',
    os_version      TEXT NOT NULL DEFAULT '',
    serial          TEXT,
    release_reason  TEXT,
    created_at      INTEGER NOT NULL,
    released_at     INTEGER
  );
  CREATE INDEX device_allocations_by_session ON device_allocations(session_id, created_at);
  CREATE INDEX device_allocations_active ON device_allocations(organization_id) WHERE released_at IS NULL;

  CREATE TABLE instances (
    id              TEXT PRIMARY KEY,
    session_id      TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    status          TEXT NOT NULL CHECK (status IN ('provisioning', 'ready', 'released', 'failed')),
    os              TEXT NOT NULL,
    image           TEXT NOT NULL,
    arch            TEXT NOT NULL,
    cpu_cores       INTEGER NOT NULL,
    memory_mb       INTEGER NOT NULL,
    disk_mb         INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    ready_at        INTEGER,
    released_at     INTEGER
  );
  CREATE INDEX instances_by_session ON instances(session_id, created_at);

  -- Metered usage: one row per assignment of a device or instance; ended_at is null while it runs.
  CREATE TABLE usage_ledger (
    id              INTEGER PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    resource        TEXT NOT NULL CHECK (resource IN ('devices', 'instances')),
    subject_id      TEXT NOT NULL,
    started_at      INTEGER NOT NULL,
    ended_at        INTEGER
  );
  CREATE INDEX usage_ledger_by_org ON usage_ledger(organization_id, resource, started_at);
  `,
  `
  -- The lab's phones as last seen through adb (and later usbmuxd): the inventory behind allocation.
  CREATE TABLE fleet_devices (
    serial        TEXT PRIMARY KEY,
    platform      TEXT NOT NULL,
    type          TEXT NOT NULL DEFAULT 'real',
    name          TEXT NOT NULL DEFAULT '',
    os_version    TEXT NOT NULL DEFAULT '',
    state         TEXT NOT NULL,
    battery       INTEGER,
    first_seen_at INTEGER NOT NULL,
    last_seen_at  INTEGER NOT NULL
  );

  -- What an allocation asked for, what the phone had before it (so that cleanup removes only what was added),
  -- and where it is in its life.
  ALTER TABLE device_allocations ADD COLUMN filters TEXT NOT NULL DEFAULT '[]';
  ALTER TABLE device_allocations ADD COLUMN packages_before TEXT;
  ALTER TABLE device_allocations ADD COLUMN assigned_at INTEGER;
  ALTER TABLE device_allocations ADD COLUMN offline_since INTEGER;
  -- set once cleanup after release has finished: a crash mid-cleanup is finished on the next start
  ALTER TABLE device_allocations ADD COLUMN cleaned_at INTEGER;
  CREATE INDEX device_allocations_by_serial ON device_allocations(serial) WHERE released_at IS NULL;
  CREATE INDEX device_allocations_queue ON device_allocations(created_at) WHERE status = 'queued';
  `,
  `
  -- Test runs reported by CI. status is checked by the API schema, not here, so that a new status needs no table
  -- rebuild. git, tags, environment and stats are JSON text, kept as the reporter sent them.
  CREATE TABLE test_results (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    session_id      TEXT REFERENCES sessions(id) ON DELETE SET NULL,
    created_by      TEXT REFERENCES users(id) ON DELETE SET NULL,
    name            TEXT NOT NULL,
    user_agent      TEXT,
    status          TEXT NOT NULL,
    git             TEXT,
    tags            TEXT NOT NULL DEFAULT '[]',
    environment     TEXT,
    stats           TEXT,
    started_at      INTEGER,
    finished_at     INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    -- unique per organization so that a createdAt cursor never skips or repeats
    UNIQUE (organization_id, created_at)
  );
  -- a session's results, and the lookup that clears session_id when a session goes
  CREATE INDEX test_results_by_session ON test_results(session_id, created_at);

  -- The content lives in the blob store under its SHA-256, so identical files are stored once.
  CREATE TABLE test_result_assets (
    id             TEXT PRIMARY KEY,
    test_result_id TEXT NOT NULL REFERENCES test_results(id) ON DELETE CASCADE,
    name           TEXT NOT NULL,
    content_type   TEXT NOT NULL,
    size           INTEGER NOT NULL,
    sha256         TEXT NOT NULL,
    created_at     INTEGER NOT NULL
  );
  CREATE INDEX test_result_assets_by_result ON test_result_assets(test_result_id, created_at);
  `,
  `
  -- The Macs of the lab. Their SSH credentials live in the secret store (the OS keychain, or a 0600 file headless),
  -- never in this database. host_key_sha256 is pinned on the first successful connection.
  CREATE TABLE mac_hosts (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL UNIQUE COLLATE NOCASE,
    address         TEXT NOT NULL,
    port            INTEGER NOT NULL,
    username        TEXT NOT NULL,
    auth            TEXT NOT NULL CHECK (auth IN ('privateKey', 'password')),
    mode            TEXT NOT NULL CHECK (mode IN ('tart', 'bare')),
    base_image      TEXT NOT NULL,
    max_instances   INTEGER NOT NULL,
    cpu_cores       INTEGER NOT NULL,
    memory_mb       INTEGER NOT NULL,
    disk_mb         INTEGER NOT NULL,
    vm_username     TEXT NOT NULL,
    vm_port         INTEGER NOT NULL,
    vm_auth         TEXT NOT NULL CHECK (vm_auth IN ('default', 'privateKey', 'password')),
    work_dir        TEXT NOT NULL,
    host_key_sha256 TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
  );

  -- Where an instance runs, and what is left to undo there: until torn_down_at is set, its VM (or the bare host's
  -- work dir) still exists and holds one of the host's slots, even after release.
  ALTER TABLE instances ADD COLUMN host_id TEXT REFERENCES mac_hosts(id) ON DELETE SET NULL;
  ALTER TABLE instances ADD COLUMN vm_name TEXT;
  ALTER TABLE instances ADD COLUMN address TEXT;
  ALTER TABLE instances ADD COLUMN status_message TEXT;
  ALTER TABLE instances ADD COLUMN torn_down_at INTEGER;
  CREATE INDEX instances_on_host ON instances(host_id) WHERE torn_down_at IS NULL;
  CREATE INDEX instances_active ON instances(organization_id) WHERE status IN ('provisioning', 'ready');
  `,
  `
  -- Allocation and release stay fast however long the lab's history grows: these are read on every allocation,
  -- release and phone event, and without indexes each read every past allocation or ledger row.
  CREATE INDEX device_allocations_uncleaned ON device_allocations(serial)
    WHERE released_at IS NOT NULL AND serial IS NOT NULL AND cleaned_at IS NULL AND packages_before IS NOT NULL;
  CREATE INDEX device_allocations_by_org ON device_allocations(organization_id, created_at);
  CREATE INDEX usage_ledger_open ON usage_ledger(subject_id) WHERE ended_at IS NULL;
  `,
  `
  -- Stored app binaries (Files, preview). The content lives in the blob store under the SHA-256 the upload really
  -- had (uploaded_sha256), checked against the declared one at completion. One file per organization and content.
  -- upload_nonce is the single use of the signed upload URL: the PUT that clears it is the only one that counts.
  CREATE TABLE files (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    created_by      TEXT REFERENCES users(id) ON DELETE SET NULL,
    filename        TEXT NOT NULL,
    size            INTEGER NOT NULL,
    sha256          TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pendingUpload', 'processing', 'ready', 'failed')),
    failure_reason  TEXT,
    platform        TEXT,
    bundle_id       TEXT,
    metadata        TEXT,
    app_id          TEXT REFERENCES apps(id) ON DELETE SET NULL,
    upload_nonce    TEXT,
    uploaded_sha256 TEXT,
    uploaded_size   INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    UNIQUE (organization_id, sha256),
    UNIQUE (organization_id, created_at)
  );
  CREATE INDEX files_by_app ON files(app_id, created_at);
  CREATE INDEX files_by_expiry ON files(expires_at);

  -- Apps: ready files grouped by organization, platform and bundle id.
  CREATE TABLE apps (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    platform        TEXT NOT NULL,
    bundle_id       TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    UNIQUE (organization_id, platform, bundle_id),
    UNIQUE (organization_id, created_at)
  );

  -- The files an allocation asked for in installApps, installed in this order before it goes in_use.
  CREATE TABLE allocation_installs (
    allocation_id TEXT NOT NULL REFERENCES device_allocations(id) ON DELETE CASCADE,
    position      INTEGER NOT NULL,
    file_id       TEXT NOT NULL,
    PRIMARY KEY (allocation_id, position)
  );
  `,
  `
  -- Chats live inside a session; metadata is the client's JSON, and its deviceId (a serial) binds the chat to a
  -- device of that session.
  CREATE TABLE chats (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    session_id      TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    title           TEXT,
    metadata        TEXT NOT NULL,
    created_at      INTEGER NOT NULL
  );
  CREATE INDEX chats_by_session ON chats(session_id, created_at);

  -- An assistant message carries its execution; the user message it answers does not.
  CREATE TABLE chat_messages (
    id            TEXT PRIMARY KEY,
    chat_id       TEXT NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
    role          TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    status        TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
    text          TEXT NOT NULL,
    execution_id  TEXT UNIQUE,
    error_code    TEXT,
    error_message TEXT,
    created_at    INTEGER NOT NULL,
    completed_at  INTEGER,
    UNIQUE (chat_id, created_at)
  );
  CREATE INDEX chat_messages_running ON chat_messages(status) WHERE status = 'running';

  CREATE TABLE chat_tool_calls (
    id            TEXT PRIMARY KEY,
    message_id    TEXT NOT NULL REFERENCES chat_messages(id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    arguments     TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'cancelled')),
    result        TEXT,
    error_code    TEXT,
    error_message TEXT,
    created_at    INTEGER NOT NULL,
    completed_at  INTEGER
  );
  CREATE INDEX chat_tool_calls_by_message ON chat_tool_calls(message_id, created_at);

  -- Every event of an execution, written before it is sent, so that a reattaching client gets exactly what was sent.
  CREATE TABLE execution_events (
    execution_id TEXT NOT NULL REFERENCES chat_messages(execution_id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    kind         TEXT NOT NULL,
    data         TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (execution_id, seq)
  ) WITHOUT ROWID;
  `,
  // Sessions can be named, and ended (everything released); both are extensions beyond the spec.
  `
  ALTER TABLE sessions ADD COLUMN name TEXT;
  ALTER TABLE sessions ADD COLUMN ended_at INTEGER;
  `,
  // Sharing a scarce lab (issue 25): who allocated, idle deadlines and release warnings, reservations, and the phone
  // each metered interval ran on (an allocation requeued after its phone vanished may run on another).
  `
  ALTER TABLE device_allocations ADD COLUMN created_by TEXT;
  -- Coalesced: written every few seconds and at each warning, so a restart keeps a deadline within that much.
  ALTER TABLE device_allocations ADD COLUMN last_activity_at INTEGER;
  ALTER TABLE device_allocations ADD COLUMN idle_deadline_at INTEGER;
  -- The release the holder has been warned of: idle_timeout or reserved, and when it will happen.
  ALTER TABLE device_allocations ADD COLUMN warning_reason TEXT;
  ALTER TABLE device_allocations ADD COLUMN warning_release_at INTEGER;
  ALTER TABLE usage_ledger ADD COLUMN serial TEXT;

  CREATE TABLE reservations (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    serial          TEXT NOT NULL,
    starts_at       INTEGER NOT NULL,
    ends_at         INTEGER NOT NULL,
    title           TEXT,
    created_by      TEXT REFERENCES users(id) ON DELETE SET NULL,
    created_at      INTEGER NOT NULL
  );
  CREATE INDEX reservations_by_serial ON reservations(serial, starts_at);
  CREATE INDEX reservations_by_start ON reservations(starts_at);
  CREATE INDEX reservations_by_end ON reservations(ends_at);
  `,
  // A user's adb public keys (~/.android/adbkey.pub), which the remote-connect bridge lets in for the phones their
  // organizations hold. A key belongs to one user: its fingerprint is unique across the lab.
  `
  CREATE TABLE adb_keys (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    title       TEXT NOT NULL,
    public_key  TEXT NOT NULL,
    fingerprint TEXT NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL
  );
  CREATE INDEX adb_keys_by_user ON adb_keys(user_id, created_at);
  `,
  // Providers: other boxes whose adb server (and usbmuxd) the hub reaches over SSH; their credentials live in the
  // secret store. A phone's host is its provider's name, or null for this workstation's own USB.
  `
  CREATE TABLE providers (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL UNIQUE COLLATE NOCASE,
    address         TEXT NOT NULL,
    port            INTEGER NOT NULL,
    username        TEXT NOT NULL,
    auth            TEXT NOT NULL CHECK (auth IN ('privateKey', 'password')),
    host_key_sha256 TEXT,
    adb_port        INTEGER NOT NULL,
    usbmuxd_socket  TEXT NOT NULL,
    paused          INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
  );
  ALTER TABLE fleet_devices ADD COLUMN host TEXT;
  `,
  // WebDriver runs: each /wd/hub session holds its phone through an allocation and reports into a test result. The row
  // outlives the engine, so that a run the engine died with is ended (and its phone released) at the next start.
  `
  CREATE TABLE webdriver_runs (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
    allocation_id   TEXT NOT NULL,
    test_result_id  TEXT,
    created_by      TEXT REFERENCES users(id) ON DELETE SET NULL,
    started_at      INTEGER NOT NULL,
    ended_at        INTEGER,
    end_reason      TEXT
  );
  CREATE INDEX webdriver_runs_running ON webdriver_runs(ended_at) WHERE ended_at IS NULL;
  CREATE INDEX webdriver_runs_by_allocation ON webdriver_runs(allocation_id);
  `,
  // An invitation's link carries a secret that lets its email sign up while sign-up is invitation-only. Only its
  // hash is kept, as for API keys; one made before gets it when its organization's admin next lists it.
  `
  ALTER TABLE invitations ADD COLUMN secret_hash TEXT;
  CREATE UNIQUE INDEX invitations_by_secret ON invitations(secret_hash);
  `,
  // What a phone held at allocation besides its packages, so that release puts it back: the paths in the folders a
  // holder may write (cleared once cleaned) and, on Android, what was running (packages and adb shell processes).
  `
  ALTER TABLE device_allocations ADD COLUMN files_before TEXT;
  ALTER TABLE device_allocations ADD COLUMN running_before TEXT;
  `,
  // Who released an allocation: the member, or null when the lab did (release_reason then says why).
  `
  ALTER TABLE device_allocations ADD COLUMN released_by TEXT;
  `,
  // Why a run ended as it did, in the words of whoever said (a WebDriver client's benchtop: status, a reporter).
  `
  ALTER TABLE test_results ADD COLUMN reason TEXT;
  `,
  // When the lab removed a result's files after the lab owner's retention period (the result itself stays), and the
  // assets by age for that sweep.
  `
  ALTER TABLE test_results ADD COLUMN files_removed_at INTEGER;
  CREATE INDEX test_result_assets_by_age ON test_result_assets(created_at);
  `,
  // The model each phone reports, kept for a phone that is away: WebDriver's appium:deviceName may name a phone by it.
  `
  ALTER TABLE fleet_devices ADD COLUMN model TEXT;
  `,
  // The lab owner's note on a phone ("shelf B", "the cracked one"): the phone's own name stays what it reports.
  `
  ALTER TABLE fleet_devices ADD COLUMN note TEXT;
  `,
];
