// Kept samples of crowded pairs, by key.
CREATE CONSTRAINT tog_sample_key IF NOT EXISTS FOR (s:TogSample) REQUIRE s.key IS UNIQUE
