"""The public surface is deliberate: what __all__ names is exactly what the package offers."""

import lazymcp


def test_all_names_exist_and_nothing_else_public_is_exported() -> None:
    assert sorted(lazymcp.__all__) == sorted(set(lazymcp.__all__))
    for name in lazymcp.__all__:
        assert hasattr(lazymcp, name), name
    public = {
        name
        for name in vars(lazymcp)
        if not name.startswith("_") and not isinstance(vars(lazymcp)[name], type(lazymcp))
    }
    assert public == set(lazymcp.__all__) - {"__version__"}


def test_the_extension_identifier_is_reverse_dns() -> None:
    from mcp.shared.extension import validate_extension_identifier

    validate_extension_identifier(lazymcp.EXT_ID, owner="lazymcp")
    assert lazymcp.EXT_ID == "io.lazymcp/lazy-tools"
