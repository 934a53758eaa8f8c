"""Per-language tree-sitter node types: which nodes declare what, and where bodies start.

A spec lists the node types that declare a symbol (with its kind), the ones that contain
members (their body is searched for nested declarations), wrappers to look through at the
same level (``export_statement``, ``decorated_definition``...), and the node types that are
bodies (the signature is the text before the body).
"""

from __future__ import annotations

from typing import Final

import msgspec

__all__ = ["SPECS", "LangSpec"]


class LangSpec(msgspec.Struct, frozen=True):
    defs: dict[str, str]
    containers: frozenset[str] = frozenset()
    wrappers: frozenset[str] = frozenset()  # look through, keep their start (export, decorators)
    scopes: frozenset[str] = frozenset()  # descend into at the same depth (namespace bodies...)
    bodies: frozenset[str] = frozenset()
    # declarations that only count when they contain one of these node types
    needs_child: dict[str, frozenset[str]] = {}


# Preprocessor conditionals and ``extern "C" { ... }`` hold any number of declarations: each is
# walked as a declaration of its own (its own line and signature), never as a prefix of the block.
_C_SCOPES = frozenset({"preproc_ifdef", "preproc_if", "preproc_else", "preproc_elif", "preproc_elifdef",
                       "linkage_specification", "declaration_list"})
_BLOCKS = frozenset({
    "block", "statement_block", "compound_statement", "class_body", "interface_body", "enum_body",
    "declaration_list", "field_declaration_list", "constructor_body", "function_body",
    "protocol_body", "enum_class_body", "template_body", "body_statement", "do_block",
    "enum_variant_list", "object_type", "enum_member_declaration_list", "accessor_list",
    "arrow_expression_clause", "Block", "ContainerDecl",
})

_JS_DEFS = {
    "class_declaration": "class", "class": "class", "abstract_class_declaration": "class",
    "function_declaration": "function", "generator_function_declaration": "function",
    "method_definition": "method", "lexical_declaration": "function", "variable_declaration": "function",
    "assignment_expression": "function",  # CommonJS ``exports.f = function (…) {}``
    # ``export default function () {}`` / ``export default (a) => …``: a function named "default"
    "function_expression": "function", "arrow_function": "function", "generator_function": "function",
    "interface_declaration": "interface", "type_alias_declaration": "type", "enum_declaration": "enum",
    "function_signature": "function", "method_signature": "method", "abstract_method_signature": "method",
    "internal_module": "namespace", "module": "namespace",
    "object": "object",  # ``export default {…}`` holding functions (bindings.exported_object)
}
_JS = LangSpec(
    defs=_JS_DEFS,
    containers=frozenset({"class_declaration", "class", "abstract_class_declaration", "interface_declaration",
                          "internal_module", "module"}),
    wrappers=frozenset({"export_statement", "ambient_declaration"}),
    # a bare ``namespace X { }`` / ``module X { }`` is parsed as an expression statement
    scopes=frozenset({"expression_statement"}),
    bodies=_BLOCKS | frozenset({"arrow_function"}),
    # ``const/let/var``: a function, a listed constant or nothing (``bindings``); an assignment
    # only when it is CommonJS ``exports.f = function``/``module.exports = class`` (``bindings``)
)

SPECS: Final[dict[str, LangSpec]] = {
    "python": LangSpec(
        # assignments count only as constants (UPPER_CASE, Final) and type aliases: see treesitter
        defs={"class_definition": "class", "function_definition": "function", "assignment": "constant",
              "type_alias_statement": "type"},
        containers=frozenset({"class_definition"}),
        wrappers=frozenset({"decorated_definition"}),
        # declarations under ``if``/``try`` (platform and version branches, optional imports)
        # are declarations; ``if __name__ == "__main__":`` is skipped (treesitter)
        scopes=frozenset({"if_statement", "elif_clause", "else_clause", "try_statement", "except_clause",
                          "finally_clause", "block"}),
        bodies=frozenset({"block"}),
    ),
    "javascript": _JS,
    "typescript": _JS,
    "tsx": _JS,
    "rust": LangSpec(
        defs={"function_item": "function", "function_signature_item": "function", "struct_item": "struct",
              "enum_item": "enum", "union_item": "union", "trait_item": "trait", "impl_item": "impl",
              "type_item": "type", "mod_item": "module", "macro_definition": "macro",
              "foreign_mod_item": "module",  # extern "C" { fn f(); }: the functions it declares
              "const_item": "constant", "static_item": "static"},  # listed: pub or UPPER_CASE (bindings)
        containers=frozenset({"trait_item", "impl_item", "mod_item", "foreign_mod_item"}),
        bodies=_BLOCKS | frozenset({"macro_rule"}),  # a macro's rules are its body
    ),
    "go": LangSpec(
        defs={"function_declaration": "function", "method_declaration": "method", "type_spec": "type",
              "type_alias": "type", "method_elem": "method",
              "const_spec": "constant", "var_spec": "variable"},  # exported ones only (bindings)
        containers=frozenset({"type_spec"}),
        scopes=frozenset({"type_declaration", "const_declaration", "var_declaration", "var_spec_list"}),
        bodies=_BLOCKS | frozenset({"interface_type", "struct_type"}),
    ),
    "java": LangSpec(
        defs={"class_declaration": "class", "interface_declaration": "interface", "enum_declaration": "enum",
              "record_declaration": "record", "annotation_type_declaration": "interface",
              "method_declaration": "method", "constructor_declaration": "constructor"},
        containers=frozenset({"class_declaration", "interface_declaration", "enum_declaration", "record_declaration"}),
        bodies=_BLOCKS,
    ),
    "c": LangSpec(
        defs={"function_definition": "function", "declaration": "function", "struct_specifier": "struct",
              "union_specifier": "union", "enum_specifier": "enum", "type_definition": "type"},
        scopes=_C_SCOPES,
        bodies=_BLOCKS,
        needs_child={"declaration": frozenset({"function_declarator"}),
                     "struct_specifier": frozenset({"field_declaration_list"}),
                     "union_specifier": frozenset({"field_declaration_list"}),
                     "enum_specifier": frozenset({"enumerator_list"})},
    ),
    "cpp": LangSpec(
        defs={"function_definition": "function", "declaration": "function", "field_declaration": "method",
              "struct_specifier": "struct", "class_specifier": "class", "union_specifier": "union",
              "enum_specifier": "enum", "type_definition": "type", "alias_declaration": "type",
              "namespace_definition": "namespace"},
        containers=frozenset({"struct_specifier", "class_specifier", "namespace_definition"}),
        scopes=_C_SCOPES,
        wrappers=frozenset({"template_declaration"}),
        bodies=_BLOCKS,
        needs_child={"declaration": frozenset({"function_declarator"}),
                     "field_declaration": frozenset({"function_declarator"}),
                     "struct_specifier": frozenset({"field_declaration_list"}),
                     "class_specifier": frozenset({"field_declaration_list"}),
                     "union_specifier": frozenset({"field_declaration_list"}),
                     "enum_specifier": frozenset({"enumerator_list"})},
    ),
    "csharp": LangSpec(
        defs={"class_declaration": "class", "interface_declaration": "interface", "struct_declaration": "struct",
              "enum_declaration": "enum", "record_declaration": "record", "namespace_declaration": "namespace",
              "file_scoped_namespace_declaration": "namespace", "method_declaration": "method",
              "constructor_declaration": "constructor", "property_declaration": "property",
              "delegate_declaration": "delegate"},
        containers=frozenset({"class_declaration", "interface_declaration", "struct_declaration",
                              "record_declaration", "namespace_declaration"}),
        scopes=frozenset({"file_scoped_namespace_declaration"}),
        bodies=_BLOCKS,
    ),
    "ruby": LangSpec(
        defs={"class": "class", "module": "module", "method": "method", "singleton_method": "method",
              "singleton_class": "class"},
        containers=frozenset({"class", "module", "singleton_class"}),
        bodies=_BLOCKS,
    ),
    "php": LangSpec(
        defs={"class_declaration": "class", "interface_declaration": "interface", "trait_declaration": "trait",
              "enum_declaration": "enum", "method_declaration": "method", "function_definition": "function",
              "namespace_definition": "namespace"},
        containers=frozenset({"class_declaration", "interface_declaration", "trait_declaration",
                              "enum_declaration", "namespace_definition"}),
        scopes=frozenset({"program"}),
        bodies=_BLOCKS,
    ),
    "kotlin": LangSpec(
        defs={"class_declaration": "class", "object_declaration": "object", "function_declaration": "function",
              "companion_object": "object", "type_alias": "type"},
        containers=frozenset({"class_declaration", "object_declaration", "companion_object"}),
        bodies=_BLOCKS,
    ),
    "swift": LangSpec(
        defs={"class_declaration": "class", "protocol_declaration": "protocol", "function_declaration": "function",
              "protocol_function_declaration": "method", "init_declaration": "constructor",
              "typealias_declaration": "type"},
        containers=frozenset({"class_declaration", "protocol_declaration"}),
        bodies=_BLOCKS,
    ),
    "scala": LangSpec(
        defs={"class_definition": "class", "object_definition": "object", "trait_definition": "trait",
              "enum_definition": "enum", "function_definition": "function", "function_declaration": "function",
              "type_definition": "type"},
        containers=frozenset({"class_definition", "object_definition", "trait_definition", "enum_definition"}),
        bodies=_BLOCKS,
    ),
    "bash": LangSpec(defs={"function_definition": "function"}, bodies=_BLOCKS),
    "lua": LangSpec(defs={"function_declaration": "function"}, bodies=_BLOCKS),
    "haskell": LangSpec(
        defs={"signature": "function", "data_type": "type", "newtype": "type", "type_synomym": "type",
              "type_family": "type", "class": "class", "instance": "instance", "function": "function"},
        containers=frozenset({"class", "instance"}),
        scopes=frozenset({"declarations", "class_declarations", "instance_declarations"}),
        bodies=frozenset({"class_declarations", "instance_declarations", "match", "data_constructors"}),
    ),
    "zig": LangSpec(defs={"Decl": "function"}, bodies=_BLOCKS),
    "elixir": LangSpec(defs={"call": "function"}, bodies=_BLOCKS),
}
