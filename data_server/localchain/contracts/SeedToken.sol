// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title SeedToken
/// @notice A plain ERC-20 placed by the local chain's seeding step at the address of a real
/// token (or of a vault share token that is not ERC-4626). The code is installed with
/// `anvil_setCode`, so no constructor runs: metadata and balances are written afterwards by
/// the seeder account, with "set" semantics so that seeding twice gives the same state.
contract SeedToken {
    /// @notice The only account allowed to write metadata and balances (no known private key;
    /// the seeding step impersonates it on the local node).
    address public constant SEEDER = 0x1C7Bb1e1b221e15065f54E80b1052FEbdb086892;

    string public name;
    string public symbol;
    uint8 public decimals;
    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    error NotSeeder();
    error InsufficientBalance();
    error InsufficientAllowance();

    modifier onlySeeder() {
        if (msg.sender != SEEDER) revert NotSeeder();
        _;
    }

    /// @notice Write the token's metadata.
    function seedMetadata(string calldata name_, string calldata symbol_, uint8 decimals_)
        external
        onlySeeder
    {
        name = name_;
        symbol = symbol_;
        decimals = decimals_;
    }

    /// @notice Set `holder`'s balance to `amount`, keeping `totalSupply` the sum of balances.
    function seedBalance(address holder, uint256 amount) external onlySeeder {
        uint256 previous = balanceOf[holder];
        balanceOf[holder] = amount;
        totalSupply = totalSupply - previous + amount;
        if (amount > previous) emit Transfer(address(0), holder, amount - previous);
        if (previous > amount) emit Transfer(holder, address(0), previous - amount);
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        _move(msg.sender, to, amount);
        return true;
    }

    function approve(address spender, uint256 amount) external returns (bool) {
        allowance[msg.sender][spender] = amount;
        emit Approval(msg.sender, spender, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        if (allowed != type(uint256).max) {
            if (allowed < amount) revert InsufficientAllowance();
            allowance[from][msg.sender] = allowed - amount;
        }
        _move(from, to, amount);
        return true;
    }

    function _move(address from, address to, uint256 amount) internal {
        uint256 balance = balanceOf[from];
        if (balance < amount) revert InsufficientBalance();
        balanceOf[from] = balance - amount;
        balanceOf[to] += amount;
        emit Transfer(from, to, amount);
    }
}
