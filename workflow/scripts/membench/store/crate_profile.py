"""The MUSTs of the profiles a bundle names, checked on the crate
ro-crate-py loaded (bundle_check calls it; docs/bundle.md, "Profiles").

From the profiles' text (Process, Workflow and Provenance Run Crate 0.6,
Workflow RO-Crate 1.1), each failure one line naming the entity:
  - the root's conformsTo names each profile, each a CreativeWork of the crate;
  - the main workflow (the root's mainEntity) is a File, SoftwareSourceCode
    and ComputationalWorkflow with a programmingLanguage of the crate, and
    the root names a licence of the crate (Workflow RO-Crate);
  - every action (CreateAction, ActivateAction, UpdateAction) has an
    instrument, each an entity of the crate typed as a tool (Process Run
    Crate); one of them runs the main workflow (Workflow Run Crate); every
    other one's tool is in the main workflow's hasPart (Provenance Run Crate);
  - what an action names as object, result, agent or environment is an
    entity of the crate: an agent a Person or Organization, an environment
    setting a PropertyValue with a name and a value; a crate whose actions
    use `environment` names the workflow-run context that defines it.
And membench's own rules on top of them: the root mentions every action;
every listed round manifest is the result of a CreateAction of a tool
(one action a round, not only the workflow's run); every listed file has an encodingFormat."""

from __future__ import annotations

from urllib.parse import unquote

from membench.store.bundle import PROFILES, WORKFLOW_RUN_CONTEXT
from membench.store.crate_rounds import is_round_manifest

METADATA = "ro-crate-metadata.json"
CLAIMED = [PROFILES["process"], PROFILES["workflow"], PROFILES["provenance"], PROFILES["workflow_ro_crate"]]
ACTIONS = {"CreateAction", "ActivateAction", "UpdateAction"}
TOOLS = {"SoftwareApplication", "SoftwareSourceCode", "ComputationalWorkflow"}
WORKFLOW = {"File", "SoftwareSourceCode", "ComputationalWorkflow"}
AGENTS = {"Person", "Organization"}


def context_problem(document: dict) -> str | None:
    """A metadata document (a JSON object whose @graph holds objects) that
    uses `environment` without the context that defines it."""
    if not any("environment" in entity for entity in document["@graph"]):
        return None
    contexts = document["@context"] if isinstance(document["@context"], list) else [document["@context"]]
    if WORKFLOW_RUN_CONTEXT in contexts:
        return None
    return f"its actions use environment, but its @context lacks {WORKFLOW_RUN_CONTEXT}, which defines it"


def profile_problem(crate) -> str | None:
    """The first MUST of the named profiles (and membench's rules) that the
    loaded crate breaks, in one line; None when it meets them all."""
    graph = {entity.id: entity.properties() for entity in crate.get_entities()}
    root = crate.root_dataset.properties()
    problem = _profiles_named(graph, root) or _main_workflow(graph, root)
    if problem:
        return problem
    main = _ids(root.get("mainEntity"))[0]
    actions = {i: p for i, p in graph.items() if types(p) & ACTIONS}
    if not any(main in _ids(p.get("instrument")) for p in actions.values()):
        return f"no action has the main workflow {main} as instrument (Workflow Run Crate: its run MUST be a CreateAction)"
    tools, mentioned = set(_ids(graph[main].get("hasPart"))), set(_ids(root.get("mentions")))
    for identifier, action in actions.items():
        problem = _action_problem(graph, identifier, action, main, tools) or (
            None if identifier in mentioned else f"{identifier}: an action the root does not list under mentions"
        )
        if problem:
            return problem
    return _files_problem(graph, actions, main)


def types(properties) -> set[str]:
    found = properties.get("@type") if isinstance(properties, dict) else None
    return {t for t in (found if isinstance(found, list) else [found]) if isinstance(t, str)}


def _ids(value) -> list:
    """The @ids a property references; None for a value that is no reference."""
    values = value if isinstance(value, list) else [] if value is None else [value]
    return [v.get("@id") if isinstance(v, dict) and isinstance(v.get("@id"), str) else None for v in values]


def _profiles_named(graph: dict, root: dict) -> str | None:
    named = set(_ids(root.get("conformsTo")))
    for profile in CLAIMED:
        if profile not in named:
            return f"{METADATA}: does not name the profile {profile}"
        if "CreativeWork" not in types(graph.get(profile)):
            return f"{profile}: named in conformsTo but no CreativeWork of the crate (the profiles: conformsTo MUST reference one)"
    return None


def _main_workflow(graph: dict, root: dict) -> str | None:
    main = _ids(root.get("mainEntity"))
    if len(main) != 1 or main[0] not in graph:
        return "the root names no main workflow of the crate as mainEntity (Workflow RO-Crate, Workflow Run Crate)"
    if not WORKFLOW <= types(graph[main[0]]):
        return f"{main[0]}: the main workflow is not a File, SoftwareSourceCode and ComputationalWorkflow (Workflow RO-Crate)"
    if not _ids(graph[main[0]].get("programmingLanguage")) or not all(i in graph for i in _ids(graph[main[0]]["programmingLanguage"])):
        return f"{main[0]}: the main workflow names no programmingLanguage of the crate (Workflow RO-Crate)"
    if not _ids(root.get("license")) or not all(i in graph for i in _ids(root["license"])):
        return "the root names no licence of the crate (Workflow RO-Crate: the crate MUST specify a license)"
    return None


def _action_problem(graph: dict, identifier: str, action: dict, main: str, tools: set) -> str | None:
    instruments = _ids(action.get("instrument"))
    if not instruments:
        return f"{identifier}: an action with no instrument (Process Run Crate: instrument MUST name the tool it ran)"
    for tool in instruments:
        if tool not in graph or not types(graph[tool]) & TOOLS:
            return f"{identifier}: its instrument {tool} is no SoftwareApplication, SoftwareSourceCode or ComputationalWorkflow of the crate"
        if tool != main and tool not in tools:
            return f"{identifier}: its tool {tool} is not in the main workflow's hasPart (Provenance Run Crate)"
    for key in ("object", "result", "agent", "environment"):
        for reference in _ids(action.get(key)):
            if reference not in graph:
                return f"{identifier}: its {key} {reference} is no entity of the crate"
            if key == "agent" and not types(graph[reference]) & AGENTS:
                return f"{identifier}: its agent {reference} is no Person or Organization"
            if key == "environment" and not ("PropertyValue" in types(graph[reference])
                                             and {"name", "value"} <= set(graph[reference])):  # fmt: skip
                return f"{identifier}: its environment {reference} is no PropertyValue with a name and a value"
    return None


def _files_problem(graph: dict, actions: dict, main: str) -> str | None:
    """A listed file with no encodingFormat; a round manifest no tool run
    (a CreateAction of a tool other than the main workflow) made."""
    made = {r for a in actions.values() if "CreateAction" in types(a) and main not in _ids(a.get("instrument"))
            for r in _ids(a.get("result"))}  # fmt: skip
    for identifier, properties in graph.items():
        if "File" not in types(properties) or identifier.startswith("#") or identifier == METADATA:
            continue
        if not properties.get("encodingFormat"):
            return f"{unquote(identifier)}: a listed file with no encodingFormat"
        if is_round_manifest(unquote(identifier)) and identifier not in made:
            return f"{unquote(identifier)}: a round's manifest that no tool's CreateAction has as result (one action a round)"
    return None
