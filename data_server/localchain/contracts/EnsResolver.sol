// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

interface IEnsOwner {
    function owner(bytes32 node) external view returns (address);
}

/// @title EnsResolver
/// @notice A minimal ENS resolver with the address profile (EIP-137 `addr(bytes32)`, interface
/// id 0x3b3b57de), writable by the owner of a node in the registry it points at.
contract EnsResolver {
    /// @notice The canonical ENS registry address, where the seeding step installs the registry.
    address public constant REGISTRY = 0x00000000000C2E074eC69A0dFb2997BA6C7d2e1e;

    mapping(bytes32 => address) internal addresses;

    event AddrChanged(bytes32 indexed node, address a);

    error NotAuthorised();

    function addr(bytes32 node) external view returns (address) {
        return addresses[node];
    }

    function setAddr(bytes32 node, address a) external {
        if (IEnsOwner(REGISTRY).owner(node) != msg.sender) revert NotAuthorised();
        addresses[node] = a;
        emit AddrChanged(node, a);
    }

    function supportsInterface(bytes4 interfaceId) external pure returns (bool) {
        return interfaceId == 0x01ffc9a7 || interfaceId == 0x3b3b57de;
    }
}
