"""Tables and views of a run's sampler history, as SQL: one definition for files and catalogs.

Tables hold what was observed; everything derivable is a view, so a history can never disagree
with itself:

* ``runs``       one row per run: method, sampler hyper-parameters, seed, config, code version;
                 ``decay_unselected`` is the factor applied per step to unobserved samples (eq. 6).
* ``steps``      one row per (run, step): effective gradient ratio, rollouts, sampler time.
* ``metrics``    long format (run, step, name, value) for anything a trainer reports.
* ``events``     one row per (run, step, observed sample): p drawn, gain, r, G, posterior
                 before and after the step's update.
* ``levels``     DIVA-GRPO runs only: (run, step, sample) difficulty level 1..9 after the step,
                 the variant offset it trained with and the mean accuracy over the original's
                 and its variant's rollouts that moved it (step 0: every initial level).
* ``peer_state`` peer samplers only (MoPPS, GRESO, MMR1, SEC): (run, step, sample, name) what the
                 peer keeps per sample, in long format (``vade.sampling.peers``: each class's
                 ``sample_state``), after the step's update: every sample at step 0 and on
                 snapshot steps, the observed samples on the other steps.
* ``snapshots``  full alpha/beta of every sample after a step: step 0 (the initial state) and every
                 ``snapshot_every`` steps. Step 0 also defines the run's set of samples.

Views:

* ``step_summary``     steps with cumulative rollouts and the ratio recomputed from events;
                       ``effective_ratio`` is the share of *trained* groups that are informative,
                       ``effective_ratio_generated`` the share of *generated* ones: they differ
                       only under DAPO's filter (DAPO, GRESO), whose trained share is 1.0 by
                       construction (the trainer's ``dapo/generated_effective_ratio`` metric).
* ``sample_history``   every sample at every step (state after that step's update): an unobserved
                       sample's state is its last known state times decay_unselected^(steps since),
                       which is exactly eq. 6 applied step by step.
* ``selection_counts`` per (run, sample): times selected, first/last step, mean accuracy.
"""

from __future__ import annotations

TABLES = ("runs", "steps", "metrics", "events", "snapshots")

CREATE_TABLES = """
CREATE TABLE IF NOT EXISTS runs (
    run_id            VARCHAR PRIMARY KEY,
    method            VARCHAR NOT NULL,
    sampler           VARCHAR NOT NULL,
    n_samples         BIGINT  NOT NULL,
    batch_size        INTEGER NOT NULL,
    seed              BIGINT  NOT NULL,
    objective         VARCHAR,
    exploration       VARCHAR,
    decay             VARCHAR,
    lambda1           DOUBLE,
    lambda2           DOUBLE,
    decay_unselected  DOUBLE,
    snapshot_every    INTEGER NOT NULL,
    config            JSON,
    code_version      VARCHAR,
    started_at        TIMESTAMP DEFAULT current_timestamp
);
CREATE TABLE IF NOT EXISTS steps (
    run_id            VARCHAR NOT NULL,
    step              INTEGER NOT NULL,
    n_selected        INTEGER NOT NULL,
    effective_ratio   DOUBLE  NOT NULL,
    mean_accuracy     DOUBLE  NOT NULL,
    rollouts          BIGINT  NOT NULL,
    sampler_seconds   DOUBLE,
    logged_at         TIMESTAMP DEFAULT current_timestamp,
    PRIMARY KEY (run_id, step)
);
CREATE TABLE IF NOT EXISTS metrics (
    run_id            VARCHAR NOT NULL,
    step              INTEGER NOT NULL,
    name              VARCHAR NOT NULL,
    value             DOUBLE,
    PRIMARY KEY (run_id, step, name)
);
CREATE TABLE IF NOT EXISTS events (
    run_id            VARCHAR NOT NULL,
    step              INTEGER NOT NULL,
    sample_id         BIGINT  NOT NULL,
    p_drawn           DOUBLE,
    gain              DOUBLE,
    correct           DOUBLE  NOT NULL,
    rollouts          DOUBLE  NOT NULL,
    alpha_before      DOUBLE,
    beta_before       DOUBLE,
    alpha_after       DOUBLE,
    beta_after        DOUBLE,
    PRIMARY KEY (run_id, step, sample_id)
);
CREATE TABLE IF NOT EXISTS levels (
    run_id            VARCHAR NOT NULL,
    step              INTEGER NOT NULL,
    sample_id         BIGINT  NOT NULL,
    level             SMALLINT NOT NULL,
    variant_offset    SMALLINT,
    mean_accuracy     DOUBLE,
    PRIMARY KEY (run_id, step, sample_id)
);
CREATE TABLE IF NOT EXISTS peer_state (
    run_id            VARCHAR NOT NULL,
    step              INTEGER NOT NULL,
    sample_id         BIGINT  NOT NULL,
    name              VARCHAR NOT NULL,
    value             DOUBLE,
    PRIMARY KEY (run_id, step, sample_id, name)
);
CREATE TABLE IF NOT EXISTS snapshots (
    run_id            VARCHAR NOT NULL,
    step              INTEGER NOT NULL,
    sample_id         BIGINT  NOT NULL,
    alpha             DOUBLE,
    beta              DOUBLE
);
"""

# Views reference tables unqualified, so the same text serves a run file and a catalog whose
# tables are unions over many attached run files.
CREATE_VIEWS = """
CREATE OR REPLACE {temp} VIEW step_summary AS
SELECT s.run_id, s.step, s.n_selected, s.effective_ratio, s.mean_accuracy, s.rollouts,
       CAST(sum(s.rollouts) OVER (PARTITION BY s.run_id ORDER BY s.step) AS BIGINT)
           AS rollouts_cumulative,
       s.sampler_seconds,
       e.effective_ratio_events,
       coalesce(g.value, s.effective_ratio) AS effective_ratio_generated
FROM steps s
LEFT JOIN (
    SELECT run_id, step,
           avg(CASE WHEN correct > 0 AND correct < rollouts THEN 1.0 ELSE 0.0 END)
               AS effective_ratio_events
    FROM events GROUP BY run_id, step
) e USING (run_id, step)
LEFT JOIN (
    SELECT run_id, step, value FROM metrics WHERE name = 'dapo/generated_effective_ratio'
) g USING (run_id, step);

CREATE OR REPLACE {temp} VIEW sample_history AS
WITH anchors AS (
    SELECT run_id, step, sample_id, alpha_after AS alpha, beta_after AS beta FROM events
    UNION ALL
    SELECT run_id, step, sample_id, alpha, beta FROM snapshots
),
grid AS (
    SELECT t.run_id, t.step, u.sample_id
    FROM (SELECT run_id, step FROM steps UNION ALL SELECT run_id, 0 FROM runs) t
    JOIN (SELECT run_id, sample_id FROM snapshots WHERE step = 0) u USING (run_id)
)
SELECT g.run_id, g.step, g.sample_id,
       e.sample_id IS NOT NULL AS selected,
       e.correct, e.rollouts, e.p_drawn, e.gain,
       a.alpha * pow(r.decay_unselected, g.step - a.step) AS alpha,
       a.beta  * pow(r.decay_unselected, g.step - a.step) AS beta,
       (a.alpha * pow(r.decay_unselected, g.step - a.step) + 1)
         / ((a.alpha + a.beta) * pow(r.decay_unselected, g.step - a.step) + 2) AS p_mean
FROM grid g
JOIN runs r ON r.run_id = g.run_id
ASOF LEFT JOIN anchors a
    ON a.run_id = g.run_id AND a.sample_id = g.sample_id AND g.step >= a.step
LEFT JOIN events e
    ON e.run_id = g.run_id AND e.step = g.step AND e.sample_id = g.sample_id;

CREATE OR REPLACE {temp} VIEW selection_counts AS
SELECT u.run_id, u.sample_id,
       count(e.step) AS times_selected,
       min(e.step) AS first_selected,
       max(e.step) AS last_selected,
       avg(e.correct / e.rollouts) AS mean_accuracy
FROM (SELECT run_id, sample_id FROM snapshots WHERE step = 0) u
LEFT JOIN events e USING (run_id, sample_id)
GROUP BY u.run_id, u.sample_id;
"""


def view_sql(temporary: bool) -> str:
    return CREATE_VIEWS.format(temp="TEMP" if temporary else "")
