-- Engagement in the statistics (docs/engagement.md): GET /v1/stats timelines and the console's
-- open rate per day read each push's received and opened counts. A push deleted by the retention
-- leaves them in its app's day, beside its delivery counters.
ALTER TABLE push_statistics_daily ADD COLUMN received bigint NOT NULL DEFAULT 0,
                                  ADD COLUMN opened bigint NOT NULL DEFAULT 0;
