-- Issue 33, rows written per conversion: conversion_events_user (userid)
-- is the leading column of conversion_events_first (userid, campaignid,
-- lower(trim(eventname)), created_at), which answers every lookup by userid
-- (a person's events for export and erasure, the foreign-key check of users
-- rows) with the same seek. Each recorded event wrote both: one index entry
-- less per conversion. A person's export sorts its own events by eventid
-- (a few rows) instead of reading them in that order.
DROP INDEX conversion_events_user;
