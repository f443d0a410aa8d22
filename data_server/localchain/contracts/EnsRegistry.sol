// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title EnsRegistry
/// @notice The read side of the ENS registry (EIP-137): `owner`, `resolver` and `ttl` of a
/// node (the namehash of a name), with the standard `setSubnodeRecord`, `setResolver` and
/// `setOwner` for owners. The local chain's seeding step installs it at the canonical
/// registry address with `anvil_setCode`; the seeder owns the root node (no constructor
/// runs, so the root's owner is the constant below).
contract EnsRegistry {
    address public constant SEEDER = 0x1C7Bb1e1b221e15065f54E80b1052FEbdb086892;

    struct Record {
        address owner;
        address resolver;
        uint64 ttl;
    }

    mapping(bytes32 => Record) internal records;

    event NewOwner(bytes32 indexed node, bytes32 indexed label, address owner);
    event Transfer(bytes32 indexed node, address owner);
    event NewResolver(bytes32 indexed node, address resolver);
    event NewTTL(bytes32 indexed node, uint64 ttl);

    error NotAuthorised();

    modifier authorised(bytes32 node) {
        address nodeOwner = owner(node);
        if (msg.sender != nodeOwner) revert NotAuthorised();
        _;
    }

    function owner(bytes32 node) public view returns (address) {
        if (node == bytes32(0) && records[node].owner == address(0)) return SEEDER;
        return records[node].owner;
    }

    function resolver(bytes32 node) external view returns (address) {
        return records[node].resolver;
    }

    function ttl(bytes32 node) external view returns (uint64) {
        return records[node].ttl;
    }

    function recordExists(bytes32 node) external view returns (bool) {
        return records[node].owner != address(0);
    }

    function setOwner(bytes32 node, address newOwner) external authorised(node) {
        records[node].owner = newOwner;
        emit Transfer(node, newOwner);
    }

    function setResolver(bytes32 node, address newResolver) external authorised(node) {
        records[node].resolver = newResolver;
        emit NewResolver(node, newResolver);
    }

    function setSubnodeRecord(
        bytes32 node,
        bytes32 label,
        address newOwner,
        address newResolver,
        uint64 newTtl
    ) external authorised(node) {
        bytes32 subnode = keccak256(abi.encodePacked(node, label));
        records[subnode] = Record(newOwner, newResolver, newTtl);
        emit NewOwner(node, label, newOwner);
        emit NewResolver(subnode, newResolver);
        emit NewTTL(subnode, newTtl);
    }
}
