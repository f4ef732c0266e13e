-- Every push has its collapse id from the moment it is accepted: the caller's, or its own id
-- (lower-case, as uuid::text spells it). Every later stage — the fan-out's job records, the
-- sender, a recall, a replacing push — reads this column and decides nothing of its own.
UPDATE pushes SET collapse_id = id::text WHERE collapse_id IS NULL;
ALTER TABLE pushes ALTER COLUMN collapse_id SET NOT NULL;
