"""Deterministic sample and synthetic MCP tool catalogs for tests, benchmarks, and demos.

`sample_tools()` returns a realistic catalog for an imaginary issue tracker and team workspace (issues, projects,
comments, cycles, wiki documents, webhooks, automations, ...): the kind of large tool list that lazy listing is meant
to shrink. `synthetic_tools(n, seed=...)` produces any number of tools with the same shape and a similar size
distribution, for scaling experiments. Every tool is a plain JSON-compatible dict exactly as it would appear in an MCP
`tools/list` result: `name`, optional `title`, `description`, `inputSchema`, `annotations`, and `_meta` carrying the
tool's category under `io.lazymcp/lazy-tools`.

The module uses only the standard library, never touches global random state, and returns fresh objects on every call,
so callers may mutate the results freely. All names and text were written for this project.
"""

from __future__ import annotations

import random
from bisect import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

__all__ = ["CATEGORIES", "sample_tools", "synthetic_tools"]

JSON = dict[str, object]

META_KEY = "io.lazymcp/lazy-tools"

# --------------------------------------------------------------------------------------------------------------------
# JSON Schema property helpers
# --------------------------------------------------------------------------------------------------------------------


def _str(description: str, **extra: object) -> JSON:
    return {"type": "string", "description": description, **extra}


def _int(description: str, minimum: int, maximum: int, **extra: object) -> JSON:
    return {"type": "integer", "description": description, "minimum": minimum, "maximum": maximum, **extra}


def _num(description: str, **extra: object) -> JSON:
    return {"type": "number", "description": description, **extra}


def _bool(description: str, default: bool = False) -> JSON:
    return {"type": "boolean", "description": description, "default": default}


def _enum(description: str, values: Sequence[str], **extra: object) -> JSON:
    return {"type": "string", "description": description, "enum": list(values), **extra}


def _fmt(fmt: str) -> Callable[[str], JSON]:
    return lambda description: {"type": "string", "description": description, "format": fmt}


_datetime, _date, _email, _uri = _fmt("date-time"), _fmt("date"), _fmt("email"), _fmt("uri")


def _ref(what: str) -> JSON:
    return _str(f"ID of the {what}.", minLength=1, maxLength=64)


def _array(description: str, items: JSON, min_items: int = 0, max_items: int = 100) -> JSON:
    return {"type": "array", "description": description, "items": items, "minItems": min_items, "maxItems": max_items}


def _refs(description: str, max_items: int = 100, min_items: int = 0) -> JSON:
    return _array(description, {"type": "string", "minLength": 1, "maxLength": 64}, min_items, max_items)


def _obj(description: str, properties: dict[str, JSON], required: Sequence[str] = ()) -> JSON:
    return {
        "type": "object",
        "description": description,
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def _page(noun: str = "items") -> dict[str, JSON]:
    return {
        "page_size": _int(f"Maximum number of {noun} to return in one page.", 1, 100, default=25),
        "cursor": _str("Opaque cursor taken from the previous page's next_cursor; omit it for the first page."),
    }


def _input_schema(properties: dict[str, JSON], required: Sequence[str]) -> JSON:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


# readOnlyHint, destructiveHint, idempotentHint by short code.
_HINTS: dict[str, tuple[bool, bool, bool]] = {
    "r": (True, False, True),  # read only
    "w": (False, False, False),  # additive write, not idempotent
    "i": (False, False, True),  # idempotent write
    "d": (False, True, True),  # destructive, idempotent (delete)
    "x": (False, True, False),  # destructive, not idempotent
}


def _tool(
    name: str,
    category: str,
    description: str,
    props: dict[str, JSON],
    required: Sequence[str],
    hints: str,
    title: str | None = None,
    open_world: bool = False,
) -> JSON:
    read_only, destructive, idempotent = _HINTS[hints]
    annotations: JSON = {"readOnlyHint": read_only, "destructiveHint": destructive, "idempotentHint": idempotent}
    if open_world:
        annotations["openWorldHint"] = True
    tool: JSON = {"name": name}
    if title is not None:
        tool["title"] = title
    tool["description"] = description
    tool["inputSchema"] = _input_schema(props, required)
    tool["annotations"] = annotations
    tool["_meta"] = {META_KEY: {"category": category}}
    return tool


# --------------------------------------------------------------------------------------------------------------------
# Sample catalog data: entities with generic CRUD actions plus hand-described custom actions
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Action:
    name: str
    text: str
    props: dict[str, JSON]
    required: tuple[str, ...] = ()
    hints: str = "r"
    title: str | None = None
    open_world: bool = False


@dataclass(frozen=True)
class _Entity:
    category: str
    noun: str
    plural: str
    key: str  # the ID property is f"{key}_id"
    where: str  # "in a team", "on an issue", ...
    fields: dict[str, JSON] = field(default_factory=dict[str, JSON])
    required: tuple[str, ...] = ()
    filters: dict[str, JSON] = field(default_factory=dict[str, JSON])
    filter_phrase: str = ""
    sort: tuple[str, ...] = ("created_at", "updated_at")
    generic: tuple[str, ...] = ()  # "kind" or "action:kind", kinds: create get list update archive delete
    custom: tuple[_Action, ...] = ()
    notes: dict[str, str] = field(default_factory=dict[str, str])  # extra sentence per generic kind

    @property
    def id_prop(self) -> str:
        return f"{self.key}_id"


STATES = ("backlog", "todo", "in_progress", "in_review", "done", "canceled")
PRIORITIES = ("urgent", "high", "medium", "low", "none")
COLOR = {"pattern": "^#[0-9a-fA-F]{6}$"}
EVENTS = ("issue.created", "issue.updated", "issue.deleted", "comment.created", "project.updated", "cycle.completed")
NOTIFICATION_TYPES = ("mention", "assignment", "comment", "status_change", "due_soon")
PAGE_SORT = _enum("Sort direction.", ("asc", "desc"), default="desc")
TARGET = _enum("Kind of object the attachment belongs to.", ("issue", "document", "comment"))
CHANGES = _obj(
    "Fields to change on every listed issue; leave a field out to keep each issue's current value.",
    {
        "state": _enum("New workflow state.", STATES),
        "priority": _enum("New priority.", PRIORITIES),
        "assignee_id": _ref("user to assign"),
        "project_id": _ref("project to move the issues into"),
        "add_label_ids": _refs("Labels to add, keeping existing ones."),
        "remove_label_ids": _refs("Labels to remove if present."),
    },
)
TRIGGER = _obj(
    "What starts the automation.",
    {
        "event": _enum("Event that fires the automation.", ("issue_created", "issue_state_changed", "label_added",
                                                              "due_date_passed", "comment_added", "schedule")),
        "cron": _str("Cron expression in UTC, only used when event is schedule, for example 0 9 * * 1.", maxLength=64),
    },
    ["event"],
)  # fmt: skip
CONDITION = _obj(
    "One condition; all conditions must hold for the automation to act.",
    {
        "field": _enum("Issue field to test.", ("state", "priority", "label", "assignee", "project", "estimate")),
        "operator": _enum("Comparison to apply.", ("equals", "not_equals", "contains", "greater_than", "is_empty")),
        "value": _str("Value to compare against, written as text."),
    },
    ["field", "operator"],
)
STEP = _obj(
    "One step the automation performs, in order.",
    {
        "type": _enum("Kind of step.", ("set_state", "assign", "add_label", "post_comment", "notify", "send_webhook")),
        "value": _str("Argument for the step: a state, user ID, label ID, comment text, or URL."),
    },
    ["type", "value"],
)
SEARCH_FILTERS = _obj(
    "Structured filters combined with the query; every filter given must match.",
    {
        "team_ids": _refs("Only issues owned by these teams."),
        "states": _array("Only issues in these workflow states.", _enum("Workflow state.", STATES)),
        "assignee_ids": _refs("Only issues assigned to these users."),
        "label_ids": _refs("Only issues carrying at least one of these labels."),
        "priority": _enum("Only issues with this priority.", PRIORITIES),
    },
)
PREFERENCES = {
    "channels": _obj(
        "Delivery channels to switch on or off.",
        {
            "email": _bool("Send notifications by email.", True),
            "push": _bool("Send push notifications to mobile devices.", True),
            "chat": _bool("Forward notifications to the connected chat app."),
        },
    ),
    "digest": _enum("How often to bundle unread notifications into a summary email.", ("off", "daily", "weekly")),
    "muted_types": _array("Notification types to stop receiving.", _enum("Notification type.", NOTIFICATION_TYPES)),
    "quiet_hours": _obj(
        "Daily window during which push notifications are held back.",
        {
            "start": _str("Start of the window as HH:MM in 24-hour time.", pattern="^[0-2][0-9]:[0-5][0-9]$"),
            "end": _str("End of the window as HH:MM in 24-hour time.", pattern="^[0-2][0-9]:[0-5][0-9]$"),
            "timezone": _str("IANA time zone name, for example Europe/Berlin."),
        },
        ["start", "end"],
    ),
}

_ENTITIES: tuple[_Entity, ...] = (
    _Entity(
        "issues", "issue", "issues", "issue", "in a team",
        fields={
            "title": _str("Short summary shown in lists and notifications.", minLength=1, maxLength=255),
            "description": _str("Longer explanation in Markdown. Mentions such as @sam notify the mentioned user."),
            "team_id": _ref("team that owns the issue"),
            "project_id": _ref("project the issue belongs to"),
            "state": _enum("Workflow state.", STATES, default="backlog"),
            "priority": _enum("Priority, from urgent down to none.", PRIORITIES, default="none"),
            "assignee_id": _ref("user responsible for the issue"),
            "label_ids": _refs("IDs of labels to attach.", 20),
            "estimate": _int("Estimate in story points.", 0, 100),
            "due_at": _datetime("Deadline for the issue."),
            "parent_id": _ref("parent issue, when this is a sub-issue"),
        },
        required=("title", "team_id"),
        filters={
            "team_id": _ref("team whose issues to list"),
            "project_id": _ref("project to restrict the list to"),
            "states": _array("Only return issues in these states.", _enum("Workflow state.", STATES)),
            "assignee_id": _ref("assignee to filter by"),
            "label_id": _ref("label the issues must carry"),
            "priority": _enum("Only return issues with this priority.", PRIORITIES),
            "updated_since": _datetime("Only return issues changed after this time."),
        },
        filter_phrase="team, project, state, assignee, label, priority, or last update",
        sort=("updated_at", "created_at", "priority", "due_at"),
        generic=("create", "get", "list", "update", "archive", "delete"),
        notes={
            "get": "The response includes the human-readable identifier, such as ENG-42, next to the internal ID.",
            "create": "The new issue gets the next identifier in the team's sequence.",
        },
        custom=(
            _Action("assign", "Assign an issue to a user, replacing any current assignee. Omit assignee_id to leave "
                    "the issue unassigned. The new assignee is notified unless they made the change themselves.",
                    {"issue_id": _ref("issue"), "assignee_id": _ref("user who should own the issue")},
                    ("issue_id",), "i"),
            _Action("transition", "Move an issue to another workflow state, for example from todo to in_progress "
                    "or from in_review to done. Transitions that skip a required review step are rejected when the "
                    "team enforces a strict workflow. An optional comment is posted together with the change.",
                    {"issue_id": _ref("issue"), "state": _enum("Target workflow state.", STATES),
                     "comment": _str("Comment to post explaining the change.", maxLength=10_000)},
                    ("issue_id", "state"), "i", "Change issue state"),
            _Action("link", "Record a relation between two issues, such as one blocking the other or one being a "
                    "duplicate. Relations are shown on both issues. Linking the same pair twice has no effect.",
                    {"issue_id": _ref("source issue"), "target_issue_id": _ref("related issue"),
                     "relation": _enum("How the source relates to the target.",
                                       ("blocks", "blocked_by", "relates_to", "duplicates"))},
                    ("issue_id", "target_issue_id", "relation"), "i"),
            _Action("unlink", "Remove a relation between two issues. Both issues keep all their other links.",
                    {"issue_id": _ref("source issue"), "target_issue_id": _ref("related issue")},
                    ("issue_id", "target_issue_id"), "d"),
            _Action("move", "Move an issue to a different team, which gives it a new identifier in that team's "
                    "sequence while the old identifier keeps redirecting. States and labels that do not exist in the "
                    "target team are mapped to the closest match or dropped.",
                    {"issue_id": _ref("issue to move"), "team_id": _ref("destination team"),
                     "keep_labels": _bool("Create missing labels in the destination instead of dropping them.")},
                    ("issue_id", "team_id"), "i"),
            _Action("duplicate", "Copy an issue into a new one with the same title, description, labels, and "
                    "project. Comments and sub-issues are copied only when asked for. The copy starts in the backlog.",
                    {"issue_id": _ref("issue to copy"), "title": _str("Title for the copy; defaults to the original."),
                     "include_sub_issues": _bool("Also copy sub-issues."),
                     "include_comments": _bool("Also copy the comment thread.")},
                    ("issue_id",), "w"),
            _Action("bulk_update", "Apply the same change to up to 250 issues in a single call. This is much faster "
                    "than updating them one by one, but it is not atomic: the response lists which issues were "
                    "updated and gives a reason for each one that failed.",
                    {"issue_ids": _refs("Issues to change.", 250, 1), "changes": CHANGES},
                    ("issue_ids", "changes"), "i", "Bulk edit issues"),
            _Action("history", "List the activity history of an issue, oldest first, covering state changes, "
                    "reassignments, label changes, and edits to the title or description. Comments are not part of "
                    "the history; use comments_list to read them.",
                    {"issue_id": _ref("issue"), **_page("events")}, ("issue_id",)),
            _Action("subscribe", "Subscribe a user to updates about an issue. When user_id is omitted the caller is "
                    "subscribed. Subscribing someone who already follows the issue changes nothing.",
                    {"issue_id": _ref("issue"), "user_id": _ref("user to subscribe")}, ("issue_id",), "i"),
        ),
    ),
    _Entity(
        "projects", "project", "projects", "project", "in the workspace",
        fields={
            "name": _str("Project name, unique within the workspace.", minLength=1, maxLength=120),
            "summary": _str("One-line summary shown on the project card.", maxLength=255),
            "description": _str("Full project brief in Markdown."),
            "team_ids": _refs("Teams that take part in the project.", 20, 1),
            "lead_id": _ref("user leading the project"),
            "status": _enum("Project status.", ("planned", "active", "paused", "completed", "canceled")),
            "start_date": _date("Planned start date."),
            "target_date": _date("Date the project should be finished by."),
            "color": _str("Display color as a hex code such as #4f46e5.", **COLOR),
        },
        required=("name", "team_ids"),
        filters={
            "team_id": _ref("team taking part"),
            "status": _enum("Only projects in this status.", ("planned", "active", "paused", "completed", "canceled")),
            "lead_id": _ref("project lead"),
        },
        filter_phrase="team, status, or lead",
        sort=("created_at", "target_date", "name"),
        generic=("create", "get", "list", "update", "archive", "delete"),
        notes={"delete": "Issues in the project are kept and simply lose their project."},
        custom=(
            _Action("add_member", "Add a user to a project with the given role. Viewers can follow progress but "
                    "cannot edit the project itself.",
                    {"project_id": _ref("project"), "user_id": _ref("user to add"),
                     "role": _enum("Role in the project.", ("member", "lead", "viewer"), default="member")},
                    ("project_id", "user_id"), "i"),
            _Action("remove_member", "Remove a user from a project. Issues assigned to them stay assigned.",
                    {"project_id": _ref("project"), "user_id": _ref("user to remove")}, ("project_id", "user_id"),
                    "d"),
            _Action("get_progress", "Report how far along a project is: issue counts per state, completed and "
                    "remaining estimate points, and a projected completion date based on recent velocity. The "
                    "projection only appears once the project has at least two finished cycles of history.",
                    {"project_id": _ref("project"), "as_of": _datetime("Compute progress as of this moment.")},
                    ("project_id",), "r", "Project progress"),
            _Action("post_update", "Post a status update to a project's feed with a health rating and a short "
                    "written summary. Everyone following the project receives it in their inbox.",
                    {"project_id": _ref("project"),
                     "health": _enum("Overall health.", ("on_track", "at_risk", "off_track")),
                     "body": _str("Update text in Markdown.", minLength=1, maxLength=20_000)},
                    ("project_id", "health", "body"), "w"),
        ),
    ),
    _Entity(
        "comments", "comment", "comments", "comment", "on an issue",
        fields={
            "issue_id": _ref("issue the comment belongs to"),
            "body": _str("Comment text in Markdown.", minLength=1, maxLength=65_536),
            "parent_comment_id": _ref("comment being replied to, for threaded replies"),
            "internal": _bool("Hide the comment from guests and customer portals."),
        },
        required=("issue_id", "body"),
        filters={"issue_id": _ref("issue whose comments to list"), "author_id": _ref("author"),
                 "created_since": _datetime("Only comments written after this time.")},
        filter_phrase="issue, author, or creation time",
        generic=("add:create", "get", "list", "edit:update", "delete"),
        notes={"update": "Edited comments show an edited marker and keep their original timestamp."},
        custom=(
            _Action("react", "Add an emoji reaction to a comment, or take it back by setting remove. Each user can "
                    "add a given emoji only once per comment.",
                    {"comment_id": _ref("comment"), "emoji": _str("Emoji shortcode such as thumbsup.", maxLength=32),
                     "remove": _bool("Remove the reaction instead of adding it.")},
                    ("comment_id", "emoji"), "i"),
            _Action("resolve", "Mark a comment thread as resolved so it collapses in the issue view, or reopen it. "
                    "Only the thread's first comment can be resolved; replies follow its status.",
                    {"comment_id": _ref("first comment of the thread"),
                     "resolved": {"type": "boolean", "description": "False reopens the thread.", "default": True}},
                    ("comment_id",), "i"),
        ),
    ),
    _Entity(
        "labels", "label", "labels", "label", "in the workspace or a single team",
        fields={
            "name": _str("Label name as shown on issues.", minLength=1, maxLength=64),
            "color": _str("Hex color such as #ef4444.", **COLOR),
            "description": _str("When to use the label.", maxLength=500),
            "team_id": _ref("team the label is limited to; leave it out for a workspace-wide label"),
            "group_id": _ref("label group, so that only one label of the group applies at a time"),
        },
        required=("name",),
        filters={"team_id": _ref("team"), "group_id": _ref("label group"),
                 "query": _str("Case-insensitive substring of the label name.")},
        filter_phrase="team, group, or name",
        sort=("name", "created_at"),
        generic=("create", "list", "update", "delete"),
        custom=(
            _Action("merge", "Merge one label into another: every issue carrying the source label gets the target "
                    "label instead, and the source label is deleted. This is the usual way to clean up near-duplicates "
                    "like bug and bugs. A merge cannot be undone.",
                    {"source_label_id": _ref("label to merge away"), "target_label_id": _ref("label to keep")},
                    ("source_label_id", "target_label_id"), "x"),
            _Action("apply", "Attach a label to a batch of issues at once. Issues that already carry the label are "
                    "left untouched, so retrying is safe.",
                    {"label_id": _ref("label"), "issue_ids": _refs("Issues to label.", 250, 1)},
                    ("label_id", "issue_ids"), "i"),
            _Action("remove", "Detach a label from a batch of issues. The label itself is kept.",
                    {"label_id": _ref("label"), "issue_ids": _refs("Issues to unlabel.", 250, 1)},
                    ("label_id", "issue_ids"), "i"),
        ),
    ),
    _Entity(
        "users", "user", "users", "user", "in the workspace",
        fields={
            "display_name": _str("Name shown to other members.", minLength=1, maxLength=80),
            "job_title": _str("Job title shown on the profile card.", maxLength=80),
            "timezone": _str("IANA time zone name, for example America/Chicago."),
            "avatar_url": _uri("Link to a square profile picture."),
        },
        filters={"team_id": _ref("team the users belong to"),
                 "role": _enum("Workspace role.", ("admin", "member", "guest")),
                 "active": {"type": "boolean", "description": "False lists deactivated users instead.",
                            "default": True}},
        filter_phrase="team, role, or whether the account is active",
        sort=("name", "created_at", "last_seen_at"),
        generic=("get", "list", "update"),
        notes={"update": "Members can only edit their own profile; admins can edit anyone's."},
        custom=(
            _Action("me", "Return the user the current credentials belong to, with their workspace role and team "
                    "memberships. Call this first when a request refers to me or my issues.", {}, ()),
            _Action("invite", "Send an email invitation to join the workspace with the given role. Guests only see "
                    "the teams they are explicitly added to. Inviting an address that already has a pending "
                    "invitation resends it rather than creating a second one.",
                    {"email": _email("Address to invite."),
                     "role": _enum("Role the person will get.", ("admin", "member", "guest"), default="member"),
                     "team_ids": _refs("Teams to add the person to once they accept.", 20),
                     "message": _str("Personal note included in the invitation email.", maxLength=1_000)},
                    ("email",), "i", "Invite someone"),
            _Action("deactivate", "Deactivate a user so they can no longer sign in, optionally handing their open "
                    "issues to someone else. Their comments, documents, and history are kept. Requires the admin role.",
                    {"user_id": _ref("user to deactivate"),
                     "reassign_to_id": _ref("user who takes over open issues")}, ("user_id",), "d"),
            _Action("reactivate", "Restore sign-in access for a previously deactivated user. Their old team "
                    "memberships are not restored automatically.", {"user_id": _ref("user")}, ("user_id",), "i"),
        ),
    ),
    _Entity(
        "teams", "team", "teams", "team", "in the workspace",
        fields={
            "name": _str("Team name.", minLength=1, maxLength=80),
            "key": _str("Short uppercase prefix used in issue identifiers, for example ENG.",
                        pattern="^[A-Z][A-Z0-9]{1,4}$"),
            "description": _str("What the team works on.", maxLength=500),
            "timezone": _str("IANA time zone used for cycle boundaries."),
            "private": _bool("Only members can see a private team and its issues."),
        },
        required=("name", "key"),
        filters={"member_id": _ref("user who must be a member"), "include_private": _bool("Include private teams "
                                                                                          "the caller belongs to.")},
        filter_phrase="member or privacy",
        sort=("name", "created_at"),
        generic=("create", "get", "list", "update", "delete"),
        notes={"delete": "A team that still owns open issues cannot be deleted; move or close them first."},
        custom=(
            _Action("add_member", "Add a user to a team. Team admins can change the team's workflow and settings.",
                    {"team_id": _ref("team"), "user_id": _ref("user to add"),
                     "role": _enum("Role in the team.", ("member", "admin"), default="member")},
                    ("team_id", "user_id"), "i"),
            _Action("remove_member", "Remove a user from a team. They lose access to the team's issues if the team "
                    "is private.", {"team_id": _ref("team"), "user_id": _ref("user to remove")},
                    ("team_id", "user_id"), "d"),
            _Action("list_members", "List the members of a team with their team roles, sorted by name. Members of "
                    "private teams are only listed for people who belong to the team.",
                    {"team_id": _ref("team"), "role": _enum("Only members with this role.", ("member", "admin")),
                     **_page("members")}, ("team_id",)),
        ),
    ),
    _Entity(
        "cycles", "cycle", "cycles", "cycle", "in a team",
        fields={
            "team_id": _ref("team running the cycle"),
            "name": _str("Cycle name; defaults to Cycle followed by its number.", maxLength=80),
            "starts_at": _datetime("When the cycle starts."),
            "ends_at": _datetime("When the cycle ends; at most eight weeks after the start."),
            "goal": _str("What the team wants to achieve in this cycle.", maxLength=1_000),
        },
        required=("team_id", "starts_at", "ends_at"),
        filters={"team_id": _ref("team"), "status": _enum("Cycle status.", ("upcoming", "active", "completed"))},
        filter_phrase="team or status",
        sort=("starts_at", "created_at"),
        generic=("create", "get", "list", "update"),
        notes={"create": "Cycles of the same team may not overlap."},
        custom=(
            _Action("add_issues", "Pull a set of issues into a cycle. Issues already in another active cycle are "
                    "moved rather than duplicated.",
                    {"cycle_id": _ref("cycle"), "issue_ids": _refs("Issues to add.", 250, 1)},
                    ("cycle_id", "issue_ids"), "i"),
            _Action("remove_issues", "Take issues out of a cycle and return them to the backlog. Time already logged "
                    "against them stays in the cycle report.",
                    {"cycle_id": _ref("cycle"), "issue_ids": _refs("Issues to remove.", 250, 1)},
                    ("cycle_id", "issue_ids"), "i"),
            _Action("close", "Close a cycle ahead of its scheduled end and decide what happens to unfinished "
                    "issues: roll them into the next cycle, send them back to the backlog, or leave them in place. "
                    "Closed cycles become read-only, and closing one twice returns an error.",
                    {"cycle_id": _ref("cycle"),
                     "carry_over": _enum("Where unfinished issues go.", ("next_cycle", "backlog", "none"),
                                         default="next_cycle")},
                    ("cycle_id",), "w", "Close cycle early"),
            _Action("report", "Build a burn-up report for a cycle with daily scope and completion numbers, broken "
                    "down by the grouping you choose. Figures are recalculated hourly, so very recent changes may be "
                    "missing.",
                    {"cycle_id": _ref("cycle"),
                     "group_by": _enum("Breakdown dimension.", ("assignee", "label", "project", "priority"))},
                    ("cycle_id",)),
        ),
    ),
    _Entity(
        "documents", "document", "documents", "document", "in the wiki",
        fields={
            "title": _str("Document title.", minLength=1, maxLength=255),
            "content": _str("Document body in Markdown.", maxLength=1_000_000),
            "project_id": _ref("project the document is attached to"),
            "parent_document_id": _ref("parent page in the wiki tree"),
            "visibility": _enum("Who can read the document.", ("workspace", "team", "private"), default="workspace"),
            "icon": _str("Single emoji shown next to the title.", maxLength=8),
        },
        required=("title",),
        filters={"project_id": _ref("project"), "parent_document_id": _ref("parent page"),
                 "author_id": _ref("author"), "updated_since": _datetime("Only documents edited after this time.")},
        filter_phrase="project, parent page, author, or last edit",
        sort=("updated_at", "title", "created_at"),
        generic=("create", "get", "list", "update", "delete"),
        notes={"update": "Every update creates a new version, which documents_list_versions can show later.",
               "get": "Large documents are returned whole; there is no partial read."},
        custom=(
            _Action("move", "Move a document somewhere else in the wiki tree, taking all its child pages along. "
                    "Links to the document keep working after the move.",
                    {"document_id": _ref("document"), "parent_document_id": _ref("new parent page"),
                     "position": _int("Position among the new siblings, starting at 0.", 0, 10_000)},
                    ("document_id",), "i"),
            _Action("list_versions", "List earlier versions of a document, newest first, with author and time of "
                    "each edit. Versions older than one year are thinned out to one per day.",
                    {"document_id": _ref("document"), **_page("versions")}, ("document_id",)),
            _Action("restore_version", "Restore a document to an earlier version. The current text is not lost: "
                    "the restore is added as a new version on top, so it can itself be undone.",
                    {"document_id": _ref("document"), "version": _int("Version number to restore.", 1, 1_000_000)},
                    ("document_id", "version"), "w"),
            _Action("export", "Export a document as Markdown, HTML, or PDF and return a download link that stays "
                    "valid for one hour. With include_children the whole subtree is bundled into one zip archive.",
                    {"document_id": _ref("document"),
                     "format": _enum("Output format.", ("markdown", "html", "pdf"), default="markdown"),
                     "include_children": _bool("Also export all child pages.")},
                    ("document_id",), "r", "Export document"),
        ),
    ),
    _Entity(
        "attachments", "attachment", "attachments", "attachment", "on an issue, document, or comment",
        filters={"target_type": TARGET, "target_id": _ref("issue, document, or comment"),
                 "content_type": _str("Only files whose MIME type starts with this, for example image/.")},
        filter_phrase="owning object or file type",
        generic=("get", "list", "delete"),
        notes={"delete": "The stored file is removed right away, and links to it stop working."},
        custom=(
            _Action("upload", "Request an upload slot for a file and attach it to an issue, document, or comment. "
                    "The response contains a pre-signed URL that must receive the file body with an HTTP PUT within "
                    "15 minutes; the attachment only becomes visible once the upload finishes. Files over 100 MB "
                    "are refused.",
                    {"target_type": TARGET, "target_id": _ref("object to attach the file to"),
                     "file_name": _str("File name including its extension.", minLength=1, maxLength=255),
                     "content_type": _str("MIME type such as image/png."),
                     "size_bytes": _int("Exact size of the file in bytes.", 1, 104_857_600)},
                    ("target_type", "target_id", "file_name", "size_bytes"), "w", "Upload a file"),
            _Action("link", "Attach an external link, such as a design file or a pull request, to an issue or "
                    "document. The preview title and icon are fetched in the background and may appear a little later.",
                    {"target_type": TARGET, "target_id": _ref("object to attach the link to"),
                     "url": _uri("Address to link to."), "title": _str("Title to show instead of the fetched one.")},
                    ("target_type", "target_id", "url"), "w", open_world=True),
            _Action("get_download_url", "Create a short-lived download link for an attachment. Anyone holding the "
                    "link can download the file until it expires, so avoid posting it in public places.",
                    {"attachment_id": _ref("attachment"),
                     "expires_in": _int("Seconds until the link expires.", 60, 86_400, default=3_600)},
                    ("attachment_id",)),
        ),
    ),
    _Entity(
        "webhooks", "webhook", "webhooks", "webhook", "in the workspace",
        fields={
            "url": _uri("HTTPS endpoint that receives the events."),
            "events": _array("Events to deliver.", _enum("Event name.", EVENTS), 1, len(EVENTS)),
            "description": _str("What the webhook is for.", maxLength=255),
            "team_id": _ref("team to limit events to; leave it out for all teams"),
            "enabled": {"type": "boolean", "description": "Whether deliveries are sent.", "default": True},
        },
        required=("url", "events"),
        filters={"enabled": {"type": "boolean", "description": "Only enabled or only disabled webhooks."},
                 "event": _enum("Only webhooks subscribed to this event.", EVENTS)},
        filter_phrase="status or subscribed event",
        generic=("create", "get", "list", "update", "delete"),
        notes={"create": "The signing secret is returned only in this response, so store it right away."},
        custom=(
            _Action("test", "Send a sample payload for the chosen event to a webhook's URL and report the HTTP "
                    "status and response time. The test is signed like a real delivery, which makes it a good check "
                    "of signature verification on the receiving side.",
                    {"webhook_id": _ref("webhook"), "event": _enum("Event to simulate.", EVENTS)},
                    ("webhook_id", "event"), "w", open_world=True),
            _Action("rotate_secret", "Generate a new signing secret for a webhook and return it once. During the "
                    "grace period deliveries carry signatures made with both the old and the new secret.",
                    {"webhook_id": _ref("webhook"),
                     "grace_period_minutes": _int("Minutes to keep the old secret valid.", 0, 1_440, default=60)},
                    ("webhook_id",), "w"),
            _Action("list_deliveries", "List recent delivery attempts for a webhook with their status codes and "
                    "timing, newest first. Deliveries are kept for 30 days.",
                    {"webhook_id": _ref("webhook"),
                     "status": _enum("Only deliveries with this outcome.", ("succeeded", "failed", "pending")),
                     "since": _datetime("Only deliveries after this time."), **_page("deliveries")},
                    ("webhook_id",)),
            _Action("redeliver", "Send a past delivery again with its original payload and a fresh signature. "
                    "Receivers should deduplicate on the delivery ID, which stays the same.",
                    {"webhook_id": _ref("webhook"), "delivery_id": _ref("delivery to resend")},
                    ("webhook_id", "delivery_id"), "w", open_world=True),
        ),
    ),
    _Entity(
        "notifications", "notification", "notifications", "notification", "in the caller's inbox",
        filters={"unread_only": _bool("Only unread notifications."),
                 "type": _enum("Only notifications of this type.", NOTIFICATION_TYPES),
                 "since": _datetime("Only notifications received after this time.")},
        filter_phrase="read state, type, or arrival time",
        generic=("list",),
        notes={"list": "Snoozed notifications stay hidden until their snooze ends."},
        custom=(
            _Action("mark_read", "Mark specific notifications as read. IDs that are already read or no longer "
                    "exist are skipped without an error.",
                    {"notification_ids": _refs("Notifications to mark.", 500, 1)}, ("notification_ids",), "i"),
            _Action("mark_all_read", "Mark every notification in the inbox as read, or only those older than a "
                    "given time. Nothing is deleted.",
                    {"before": _datetime("Only mark notifications received before this time.")}, (), "i"),
            _Action("snooze", "Hide a notification until a later time, when it comes back as unread. Snoozing "
                    "again replaces the earlier time.",
                    {"notification_id": _ref("notification"), "until": _datetime("When the notification returns.")},
                    ("notification_id", "until"), "i"),
            _Action("archive", "Move notifications out of the inbox into the archive. Archived notifications are "
                    "deleted after 90 days.",
                    {"notification_ids": _refs("Notifications to archive.", 500, 1)}, ("notification_ids",), "i"),
            _Action("get_preferences", "Return the caller's notification settings: channels, digest frequency, "
                    "muted types, and quiet hours. Defaults apply for every setting the caller never changed.", {}, ()),
            _Action("update_preferences", "Change how and when the caller is notified, including channels, digest "
                    "frequency, muted notification types, and quiet hours. Settings left out keep their current value.",
                    PREFERENCES, (), "i", "Notification settings"),
        ),
    ),
    _Entity(
        "timelogs", "time entry", "time entries", "entry", "on an issue",
        fields={
            "issue_id": _ref("issue the time was spent on"),
            "minutes": _int("Time spent, in minutes.", 1, 1_440),
            "started_at": _datetime("When the work started; defaults to the minutes before now."),
            "note": _str("What was done.", maxLength=500),
            "billable": _bool("Count the time as billable to the client.", True),
        },
        required=("issue_id", "minutes"),
        filters={"issue_id": _ref("issue"), "user_id": _ref("person who logged the time"),
                 "from": _datetime("Start of the period."), "to": _datetime("End of the period."),
                 "billable": {"type": "boolean", "description": "Only billable or only non-billable entries."}},
        filter_phrase="issue, person, period, or billability",
        sort=("started_at", "created_at"),
        generic=("log:create", "list", "update", "delete"),
        notes={"update": "Entries in a locked billing period cannot be changed."},
        custom=(
            _Action("start_timer", "Start a running timer on an issue for the caller. Only one timer can run at a "
                    "time, so starting a new one stops the previous timer and saves it as a time entry.",
                    {"issue_id": _ref("issue"), "note": _str("What you are working on.", maxLength=500)},
                    ("issue_id",), "w"),
            _Action("stop_timer", "Stop the caller's running timer and save the elapsed time as a time entry, "
                    "rounded up to the next whole minute. Pass discard to throw the timer away instead.",
                    {"discard": _bool("Discard the timer without saving an entry.")}, (), "w"),
            _Action("summary", "Summarise logged time over a period, grouped by person, project, issue, label, or "
                    "day, with billable and non-billable totals. Periods longer than one year are rejected.",
                    {"from": _datetime("Start of the period."), "to": _datetime("End of the period."),
                     "group_by": _enum("Grouping.", ("user", "project", "issue", "label", "day"), default="user"),
                     "user_ids": _refs("Only time logged by these people."),
                     "billable_only": _bool("Leave out non-billable time.")},
                    ("from", "to"), "r", "Time report"),
        ),
    ),
    _Entity(
        "search", "search", "searches", "search", "",
        custom=(
            _Action("issues", "Search issues by keyword and structured filters at once, returning the best matches "
                    "first. The query matches titles, descriptions, and identifiers such as ENG-42, and exact "
                    "identifier matches always rank first. Results respect the caller's team visibility.",
                    {"query": _str("Search text.", minLength=1, maxLength=500), "filters": SEARCH_FILTERS,
                     **_page("issues")}, ("query",)),
            _Action("documents", "Full-text search across wiki documents, ranked by relevance and freshness. "
                    "Set include_history to also match text that only exists in older versions.",
                    {"query": _str("Search text.", minLength=1, maxLength=500), "project_id": _ref("project"),
                     "include_history": _bool("Search older versions too."), **_page("documents")}, ("query",)),
            _Action("comments", "Find comments containing the given words, optionally within one issue or from "
                    "one author. Internal comments are only searched for members, never for guests.",
                    {"query": _str("Search text.", minLength=1, maxLength=500), "issue_id": _ref("issue"),
                     "author_id": _ref("author"), **_page("comments")}, ("query",)),
            _Action("everything", "Run one query across issues, projects, documents, comments, users, and teams and "
                    "return a single mixed, ranked list. Use it when it is unclear what kind of object the user means; "
                    "the narrower search tools offer filters and pagination.",
                    {"query": _str("Search text.", minLength=1, maxLength=500),
                     "types": _array("Object kinds to include; all kinds when omitted.",
                                     _enum("Object kind.", ("issue", "project", "document", "comment", "user",
                                                            "team"))),
                     "limit": _int("Maximum number of results.", 1, 50, default=20)},
                    ("query",), "r", "Search everything"),
            _Action("suggest", "Return quick autocomplete suggestions for a partial name of a user, label, project, "
                    "or team. It favours speed over completeness: at most 20 suggestions and no pagination.",
                    {"prefix": _str("The first characters typed.", minLength=1, maxLength=100),
                     "type": _enum("Kind of object to suggest.", ("user", "label", "project", "team")),
                     "limit": _int("Maximum number of suggestions.", 1, 20, default=10)},
                    ("prefix", "type")),
            _Action("save", "Save an issue search under a name so it can be rerun later or shared with the team. "
                    "Names only need to be unique per owner.",
                    {"name": _str("Name for the saved search.", minLength=1, maxLength=120),
                     "query": _str("Search text."), "filters": SEARCH_FILTERS,
                     "shared": _bool("Make the saved search visible to the whole workspace.")},
                    ("name",), "w"),
            _Action("list_saved", "List the saved searches the caller can use, their own and shared ones. Each entry "
                    "includes the query and filters, ready to pass to search_issues.",
                    _page("saved searches"), ()),
            _Action("delete_saved", "Delete a saved search. Only its owner or an admin may do this.",
                    {"saved_search_id": _ref("saved search")}, ("saved_search_id",), "d"),
        ),
    ),
    _Entity(
        "automations", "automation", "automations", "automation", "in a team or across the workspace",
        fields={
            "name": _str("Automation name.", minLength=1, maxLength=120),
            "description": _str("What the automation is for.", maxLength=500),
            "team_id": _ref("team the automation is limited to"),
            "trigger": TRIGGER,
            "conditions": _array("Conditions that must all hold.", CONDITION, 0, 20),
            "actions": _array("Steps to run, in order.", STEP, 1, 10),
            "enabled": {"type": "boolean", "description": "Start the automation right away.", "default": True},
        },
        required=("name", "trigger", "actions"),
        filters={"team_id": _ref("team"), "enabled": {"type": "boolean", "description": "Filter by enabled state."}},
        filter_phrase="team or enabled state",
        sort=("name", "created_at", "last_run_at"),
        generic=("create", "get", "list", "update", "delete"),
        notes={"create": "Automations never trigger each other, which rules out loops."},
        custom=(
            _Action("enable", "Switch an automation on so that it reacts to its trigger again. Events that "
                    "happened while it was off are not replayed.",
                    {"automation_id": _ref("automation")}, ("automation_id",), "i"),
            _Action("disable", "Switch an automation off without deleting it. Runs already in progress finish.",
                    {"automation_id": _ref("automation")}, ("automation_id",), "i"),
            _Action("run", "Run an automation immediately against one issue, skipping its trigger but still "
                    "checking its conditions. With dry_run nothing changes, and the response describes what would "
                    "have happened.",
                    {"automation_id": _ref("automation"), "issue_id": _ref("issue to run against"),
                     "dry_run": _bool("Only report what would happen.")},
                    ("automation_id", "issue_id"), "w", "Run automation now"),
            _Action("list_runs", "List past runs of an automation with their outcome and the issue each run "
                    "touched, newest first. Failed runs include the error message of the step that failed.",
                    {"automation_id": _ref("automation"),
                     "status": _enum("Only runs with this outcome.", ("succeeded", "failed", "skipped")),
                     **_page("runs")}, ("automation_id",)),
        ),
    ),
    _Entity(
        "milestones", "milestone", "milestones", "milestone", "in a project",
        fields={
            "project_id": _ref("project"),
            "name": _str("Milestone name.", minLength=1, maxLength=120),
            "description": _str("What has to be true when the milestone is reached.", maxLength=2_000),
            "target_date": _date("Date the milestone should be reached."),
        },
        required=("project_id", "name"),
        filters={"project_id": _ref("project"), "completed": {"type": "boolean",
                                                              "description": "Only completed or open milestones."}},
        filter_phrase="project or completion",
        sort=("target_date", "name"),
        generic=("create", "list", "update", "delete"),
        custom=(
            _Action("complete", "Mark a milestone as reached. Open issues linked to it are not closed.",
                    {"milestone_id": _ref("milestone"),
                     "completed_at": _datetime("When it was reached; defaults to now.")}, ("milestone_id",), "i"),
        ),
    ),
    _Entity(
        "customfields", "custom field", "custom fields", "field", "in the workspace",
        fields={
            "name": _str("Field name shown on issues.", minLength=1, maxLength=64),
            "type": _enum("Value type.", ("text", "number", "date", "select", "multi_select", "user", "url")),
            "options": _array("Choices for select fields.", {"type": "string", "maxLength": 64}, 0, 200),
            "team_id": _ref("team the field applies to; leave it out for every team"),
            "required": _bool("Require a value before an issue can be closed."),
        },
        required=("name", "type"),
        filters={"team_id": _ref("team")},
        filter_phrase="team",
        sort=("name", "created_at"),
        generic=("create", "list", "update", "delete"),
        notes={"delete": "Values stored in the field on existing issues are deleted with it."},
        custom=(
            _Action("set_value", "Set the value of a custom field on one issue. The value must fit the field's "
                    "type, and null clears it.",
                    {"field_id": _ref("custom field"), "issue_id": _ref("issue"),
                     "value": {"type": ["string", "number", "array", "null"], "items": {"type": "string"},
                               "description": "New value: text, number, ISO date, option name, or list of options."}},
                    ("field_id", "issue_id", "value"), "i"),
        ),
    ),
    _Entity(
        "audit", "audit event", "audit events", "event", "",
        custom=(
            _Action("list_events", "List security-relevant events such as sign-ins, permission changes, exports, "
                    "and deletions, newest first. Only workspace admins can read the audit log, and events are kept "
                    "for one year.",
                    {"actor_id": _ref("user who performed the action"),
                     "entity_type": _enum("Kind of object affected.", ("issue", "project", "user", "team", "webhook")),
                     "from": _datetime("Start of the period."), "to": _datetime("End of the period."),
                     **_page("events")}, ()),
            _Action("get_event", "Fetch one audit event with its full before-and-after details and the IP address "
                    "it came from. Only workspace admins can read it.",
                    {"event_id": _ref("audit event")}, ("event_id",)),
            _Action("export", "Export the audit log for a period as CSV or JSON Lines and email a download link to "
                    "the caller. Large exports can take several minutes to prepare.",
                    {"from": _datetime("Start of the period."), "to": _datetime("End of the period."),
                     "format": _enum("File format.", ("csv", "jsonl"), default="csv")},
                    ("from", "to"), "r", "Export audit log"),
        ),
    ),
)  # fmt: skip

CATEGORIES: tuple[str, ...] = tuple(entity.category for entity in _ENTITIES)

# Wording variants per generic kind, picked by entity position so that neighbouring categories read differently.
_TEMPLATES: dict[str, tuple[str, ...]] = {
    "create": (
        "Create a new {noun} {where} and return it with its generated ID. Only {required} {is_are} required; any "
        "other field can be set now or later with {cat}_{update}.",
        "Create {a_noun} {where} from the supplied fields and return the stored record, including server-assigned "
        "timestamps. Creation is not idempotent: calling twice makes two {plural}.",
        "{Action} {a_noun} {where}. The response contains the full {noun}, so there is no need to fetch it again, "
        "and the call fails with a validation error when {required_or} is missing.",
    ),
    "get": (
        "Fetch a single {noun} by its ID, including every field the caller is allowed to see. Returns a not-found "
        "error if it does not exist or has been deleted.",
        "Retrieve the full record for one {noun}. If you only know the name, find the ID with {cat}_list first.",
        "Look up {a_noun} by ID and return its current state along with who created it and when. The caller needs "
        "read access to the {noun}, otherwise the result is a not-found error.",
    ),
    "list": (
        "List {plural} {where}, optionally filtered by {filters}, with the most relevant sort applied by default. "
        "Results are paginated: pass the returned next_cursor to get the following page.",
        "Return a page of {plural}, filtered by {filters}. Pagination is cursor-based, and a missing next_cursor "
        "means there are no more results.",
        "Page through the {plural} visible to the caller, with optional filters for {filters}. Use page_size (1 to "
        "100, default 25) to control the batch size and sort to change the order.",
    ),
    "update": (
        "Change fields on an existing {noun} and return the updated record. Only the fields you send are modified, "
        "so repeating the same call is harmless.",
        "Apply a partial update to {a_noun}; fields you leave out keep their current values. The change is recorded "
        "in the activity log with the caller as the author.",
        "{Action} {a_noun} in place. Send just the fields to change together with {id_prop}.",
    ),
    "archive": (
        "Archive {a_noun} so it disappears from default lists and search results without losing any data. "
        "Archiving is reversible from the web app, and archiving twice has no extra effect.",
        "Move {a_noun} to the archive, hiding it from everyday views. Archived {plural} stay searchable with "
        "include_archived and can be restored by an admin.",
    ),
    "delete": (
        "Permanently delete {a_noun} by ID. This cannot be undone, and deleting something already gone still "
        "reports success.",
        "Delete {a_noun} for good. Only its creator or a workspace admin can do this.",
        "Remove {a_noun} irreversibly. References to it elsewhere are cleared.",
    ),
}
_KIND_HINTS = {"create": "w", "get": "r", "list": "r", "update": "i", "archive": "i", "delete": "d"}


def _article(noun: str) -> str:
    return f"an {noun}" if noun[0] in "aeio" else f"a {noun}"


def _join(words: Sequence[str], conjunction: str = "and") -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {conjunction} {words[-1]}"


def _generic(entity: _Entity, index: int, action: str, kind: str) -> JSON:
    noun, id_ref = entity.noun, {entity.id_prop: _ref(entity.noun)}
    props: dict[str, JSON]
    required: Sequence[str] = ()
    if kind == "create":
        props, required = entity.fields, entity.required
    elif kind == "list":
        props = {
            **entity.filters,
            "sort": _enum("Field to sort by.", entity.sort, default=entity.sort[0]),
            "order": PAGE_SORT,
            **_page(entity.plural),
        }
        if "archive" in entity.generic:
            props["include_archived"] = _bool(f"Also return archived {entity.plural}.")
    elif kind == "update":
        owner = entity.required[0] if entity.required and entity.required[0].endswith("_id") else None
        props = {**id_ref, **{k: v for k, v in entity.fields.items() if k != owner}}  # the owner is fixed
        required = (entity.id_prop,)
    else:
        props, required = id_ref, (entity.id_prop,)
    update = next((g.split(":")[0] for g in entity.generic if g.endswith("update")), "update")
    variants = _TEMPLATES[kind]
    text = variants[index % len(variants)].format(
        noun=noun,
        plural=entity.plural,
        a_noun=_article(noun),
        where=entity.where,
        cat=entity.category,
        filters=entity.filter_phrase,
        required=_join(entity.required or ("nothing",)),
        required_or=_join(entity.required or ("nothing",), "or"),
        update=update,
        is_are="is" if len(entity.required) == 1 else "are",
        Action=action.capitalize(),
        id_prop=entity.id_prop,
    )
    if kind in entity.notes:
        text = f"{text} {entity.notes[kind]}"
    title = f"{action.capitalize()} {noun}" if kind == "create" else None
    name = f"{entity.category}_{action}"
    return _tool(name, entity.category, text, props, required, _KIND_HINTS[kind], title)


def sample_tools() -> list[dict[str, object]]:
    """Return the built-in sample catalog (130 issue-tracker tools in 17 categories), freshly built on every call."""
    tools: list[JSON] = []
    for index, entity in enumerate(_ENTITIES):
        for spec in entity.generic:
            action, _, kind = spec.partition(":")
            tools.append(_generic(entity, index, action, kind or action))
        tools.extend(
            _tool(
                f"{entity.category}_{a.name}",
                entity.category,
                a.text,
                a.props,
                a.required,
                a.hints,
                a.title,
                a.open_world,
            )
            for a in entity.custom
        )
    return _fresh(tools)


def _fresh(value: list[JSON]) -> list[JSON]:
    """Deep-copy JSON data so callers never share nested dicts with module-level tables or each other."""

    def copy(item: object) -> object:
        if isinstance(item, dict):
            return {k: copy(v) for k, v in cast("JSON", item).items()}
        if isinstance(item, list):
            return [copy(v) for v in cast("list[object]", item)]
        return item

    return [{k: copy(v) for k, v in tool.items()} for tool in value]


# --------------------------------------------------------------------------------------------------------------------
# Synthetic catalogs of any size
# --------------------------------------------------------------------------------------------------------------------

_NOUNS = (
    "invoice", "order", "customer", "product", "shipment", "ticket", "contract", "payment", "subscription", "refund",
    "warehouse", "vendor", "employee", "candidate", "interview", "campaign", "lead", "deal", "account", "contact",
    "meeting", "report", "dashboard", "dataset", "pipeline", "job", "build", "deployment", "release", "incident",
    "alert", "monitor", "service", "cluster", "volume", "snapshot", "secret", "certificate", "domain", "bucket",
    "queue", "topic", "message", "channel", "thread", "file", "folder", "form", "survey", "venue", "course", "lesson",
    "grade", "recipe", "device", "sensor", "vehicle", "route", "driver", "policy", "claim", "patient", "appointment",
    "asset", "budget", "expense", "forecast", "supplier", "coupon", "review", "playlist", "booking",
)  # fmt: skip

# action, hints code, whether it targets one existing object, first-sentence variants
_SYN_ACTIONS: tuple[tuple[str, str, bool, tuple[str, ...]], ...] = (
    ("create", "w", False, ("Create a new {noun} from the given fields and return it.",
                            "Create {a_noun} and return the stored record together with its newly assigned ID.")),
    ("get", "r", True, ("Fetch one {noun} by its ID.",
                        "Return the full details of a single {noun}, including fields that list results leave out.")),
    ("list", "r", False, ("List {plural} that match the given filters, newest first.",
                          "Return a page of the {plural} visible to the caller.")),
    ("update", "i", True, ("Update selected fields of an existing {noun}.",
                           "Change one or more fields of {a_noun} and return the record as it looks afterwards.")),
    ("delete", "d", True, ("Delete {a_noun} permanently.", "Remove {a_noun} by ID; this cannot be undone.")),
    ("archive", "i", True, ("Archive {a_noun} so it no longer shows up in everyday views.",)),
    ("restore", "i", True, ("Restore {a_noun} that was previously archived or moved to the trash.",)),
    ("search", "r", False, ("Search {plural} by keyword across their names, descriptions, and tags.",
                            "Find {plural} whose text matches a query, ranked by relevance.")),
    ("export", "r", False, ("Export {plural} to a downloadable file in CSV or JSON format.",)),
    ("import", "w", False, ("Import {plural} in bulk from a file that was uploaded earlier.",)),
    ("assign", "i", True, ("Assign {a_noun} to a person or group, replacing whoever owned it before.",)),
    ("approve", "i", True, ("Approve a pending {noun} so that it can move on to the next stage of its review.",)),
    ("sync", "w", False, ("Synchronise {plural} with the connected external system and report what changed.",)),
    ("validate", "r", True, ("Check {a_noun} for missing or inconsistent data without changing anything.",)),
    ("count", "r", False, ("Count the {plural} that match the given filters without returning them.",)),
    ("duplicate", "w", True, ("Make a copy of an existing {noun} under a new ID.",)),
)  # fmt: skip

_SYN_EXTRA = (
    "Results are paginated with an opaque cursor that is passed back to fetch the next page.",
    "The caller needs at least the editor role in the workspace that owns the {noun}.",
    "Every change is written to the audit log together with the caller's identity.",
    "Requests are rate limited to 60 per minute for each user.",
    "Fields the caller is not allowed to see are left out of the response rather than returned empty.",
    "People watching the {noun} are notified once the change is saved.",
    "All timestamps are returned in UTC using the ISO 8601 format.",
    "Large requests may be processed in the background, in which case the response contains a job ID to poll.",
    "Deleted {plural} are excluded from the results.",
    "The response carries an etag that can be sent back to detect conflicting edits.",
    "When two edits to the same {noun} collide, the later one wins.",
    "Only administrators of the account may call this.",
    "Archived {plural} remain readable but can no longer be modified.",
    "IDs are stable, so callers may store them.",
    "Very old {plural} can take a little longer to load because they are kept in cold storage.",
    "Unknown fields cause the request to be rejected with a validation error.",
    "Webhooks subscribed to {noun} events fire after the change is committed.",
    "The operation is safe to retry after a network error.",
)

_SYN_FIELDS: tuple[tuple[str, Callable[[str], JSON], str], ...] = (  # "name" must stay first (see create)
    ("name", lambda d: _str(d, minLength=1, maxLength=120), "Display name of the {noun}."),
    ("description", lambda d: _str(d, maxLength=10_000), "Free-form notes about the {noun}, in Markdown."),
    ("status", lambda d: _enum(d, ("draft", "active", "paused", "closed")), "Lifecycle status of the {noun}."),
    ("priority", lambda d: _enum(d, ("low", "normal", "high", "critical")), "How urgent the {noun} is."),
    ("owner_email", _email, "Email address of the person who owns the {noun}."),
    ("external_url", _uri, "Link to the {noun} in another system."),
    ("tags", lambda d: _array(d, {"type": "string", "maxLength": 40}, 0, 50), "Tags used to group {plural}."),
    ("created_after", _datetime, "Only include {plural} created after this time."),
    ("due_at", _datetime, "When the {noun} is due."),
    ("page_size", lambda d: _int(d, 1, 100, default=25), "Maximum number of {plural} per page."),
    ("cursor", _str, "Cursor from the previous page; omit it for the first page."),
    ("amount", lambda d: _num(d, minimum=0), "Monetary amount attached to the {noun}."),
    ("currency", lambda d: _str(d, pattern="^[A-Z]{3}$"), "Three-letter ISO 4217 currency code."),
    ("quantity", lambda d: _int(d, 0, 10_000), "Number of units."),
    ("notify", lambda d: _bool(d, True), "Notify people watching the {noun}."),
    ("dry_run", _bool, "Validate the request without saving anything."),
    ("reason", lambda d: _str(d, maxLength=500), "Short explanation recorded in the audit log."),
    ("assignee_id", lambda d: _str(d, maxLength=64), "ID of the person responsible for the {noun}."),
    ("parent_id", lambda d: _str(d, maxLength=64), "ID of the parent {noun}, if any."),
    ("sort", lambda d: _enum(d, ("created_at", "updated_at", "name")), "Field to sort {plural} by."),
    ("order", lambda d: _enum(d, ("asc", "desc"), default="desc"), "Sort direction."),
    ("locale", lambda d: _str(d, pattern="^[a-z]{2}(-[A-Z]{2})?$"), "Language for generated text, such as en-GB."),
    ("include", lambda d: _array(d, _enum("Related data.", ("owner", "history", "attachments", "comments"))),
     "Related data to embed in the response."),
    ("metadata", lambda d: {"type": "object", "description": d, "additionalProperties": {"type": "string"}},
     "Arbitrary string key-value pairs stored with the {noun}."),
    ("address", lambda d: _obj(d, {"street": _str("Street and number."), "city": _str("City."),
                                   "postal_code": _str("Postal code."),
                                   "country": _str("Two-letter country code.", pattern="^[A-Z]{2}$")}, ["country"]),
     "Postal address associated with the {noun}."),
)  # fmt: skip

_SENTENCE_CUMULATIVE = (0.25, 0.65, 0.90)  # 1-4 sentences: 25%, 40%, 25%, 10%
_PROPERTY_CUMULATIVE = (0.10, 0.28, 0.48, 0.64, 0.76, 0.85, 0.91, 0.95, 0.98)  # 1-10 properties, mostly 2-5


def _plural(noun: str) -> str:
    if noun.endswith("y") and noun[-2] not in "aeiou":
        return f"{noun[:-1]}ies"
    return f"{noun}es" if noun.endswith(("s", "x", "ch", "sh")) else f"{noun}s"


def synthetic_tools(n: int, *, seed: int = 0) -> list[dict[str, object]]:
    """Return `n` generated tools with unique names, deterministic for a given `(n, seed)`.

    Names are `<domain>_<action>`; once every domain/action pair is used, numbered domains (`invoices2_create`, ...)
    keep names unique at any size. A prefix of a longer list equals the shorter list for the same seed.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    actions = list(_SYN_ACTIONS)
    nouns = list(_NOUNS)
    rng.shuffle(actions)
    rng.shuffle(nouns)
    # Per noun, everything that does not depend on the action: plural, article, formatted sentences and fields.
    domains: list[tuple[str, str, dict[str, str], tuple[str, ...], list[tuple[str, Callable[[str], JSON], str]]]] = []
    for noun in nouns:
        words = {"noun": noun, "plural": _plural(noun), "a_noun": _article(noun)}
        extras = tuple(sentence.format_map(words) for sentence in _SYN_EXTRA)
        fields = [(name, make, doc.format_map(words)) for name, make, doc in _SYN_FIELDS]
        domains.append((noun, words["plural"], words, extras, fields))
    per_round = len(nouns) * len(actions)
    tools: list[JSON] = []
    for i in range(n):
        variant, rest = divmod(i, per_round)
        noun_index, action_index = divmod(rest, len(actions))
        noun, plural, words, extras, fields = domains[noun_index]
        action, hints, targeted, firsts = actions[action_index]
        category = f"{plural}{variant + 1}" if variant else plural

        sentences = bisect(_SENTENCE_CUMULATIVE, rng.random())
        first = firsts[rng.randrange(len(firsts))].format_map(words)
        description = " ".join([first, *rng.sample(extras, sentences)]) if sentences else first

        count = bisect(_PROPERTY_CUMULATIVE, rng.random()) + 1
        props: dict[str, JSON] = {}
        required: list[str] = []
        pool = fields
        if targeted:
            required.append(f"{noun}_id")
            props[f"{noun}_id"] = _str(f"ID of the {noun}.", minLength=1, maxLength=64)
            count -= 1
        elif action == "create":  # creating always needs a name; the rest is optional
            name, make, doc = fields[0]
            required.append(name)
            props[name] = make(doc)
            pool, count = fields[1:], count - 1
        for name, make, doc in rng.sample(pool, count):
            props[name] = make(doc)

        title = None
        if rng.random() < 0.15:
            subject = noun if targeted or action == "create" else plural
            title = f"{action.capitalize()} {subject}" + (f" ({variant + 1})" if variant else "")
        tools.append(_tool(f"{category}_{action}", category, description, props, required, hints, title))
    return tools
